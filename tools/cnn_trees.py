#!/usr/bin/env python3
"""Writes the printed module trees (print(model)) of six ImageNet models, as
torchvision and timm print them, so carma's module-tree parser can be checked
on convolutional networks against the layer tables of tools/imagenet_tables.py
(the same architectures):
  torchvision: resnet50, vgg16, mobilenet_v2, efficientnet_b0,
               inception_v3 (aux_logits=False)
  timm:        xception (<= 0.6 'xception', later 'legacy_xception')
Usage: cnn_trees.py OUTDIR"""
import os
import sys

BN = "eps=1e-05, momentum=0.1, affine=True, track_running_stats=True"


def conv(cin, cout, k, s=1, p=0, groups=1, bias=False):
    kh, kw = k if isinstance(k, tuple) else (k, k)
    ph, pw = p if isinstance(p, tuple) else (p, p)
    a = f"{cin}, {cout}, kernel_size=({kh}, {kw}), stride=({s}, {s})"
    if ph or pw:
        a += f", padding=({ph}, {pw})"
    if groups != 1:
        a += f", groups={groups}"
    if not bias:
        a += ", bias=False"
    return ("Conv2d", a)


def bn(c, eps=None):
    return ("BatchNorm2d", f"{c}, " + (BN if eps is None else BN.replace("1e-05", eps)))


def leaf(cls, args=""):
    return (cls, args)


def seq(cls, children):
    """children: list of (name, node); node is a leaf tuple or a seq."""
    return (cls, children)


def render(node, name=None, depth=0):
    cls, body = node
    pre = "  " * depth + (f"({name}): " if name is not None else "")
    if isinstance(body, str):
        return [pre + f"{cls}({body})"]
    out = [pre + f"{cls}("]
    for n, ch in body:
        out += render(ch, n, depth + 1)
    out.append("  " * depth + ")")
    return out


def numbered(nodes):
    return [(str(i), n) for i, n in enumerate(nodes)]


def resnet50():
    kids = [("conv1", conv(3, 64, 7, 2, 3)), ("bn1", bn(64)),
            ("relu", leaf("ReLU", "inplace=True")),
            ("maxpool", leaf("MaxPool2d",
                             "kernel_size=3, stride=2, padding=1, dilation=1, ceil_mode=False"))]
    cin = 64
    for li, (width, blocks, stride) in enumerate([(64, 3, 1), (128, 4, 2), (256, 6, 2),
                                                  (512, 3, 2)]):
        bl = []
        for i in range(blocks):
            s = stride if i == 0 else 1
            b = [("conv1", conv(cin, width, 1)), ("bn1", bn(width)),
                 ("conv2", conv(width, width, 3, s, 1)), ("bn2", bn(width)),
                 ("conv3", conv(width, width * 4, 1)), ("bn3", bn(width * 4)),
                 ("relu", leaf("ReLU", "inplace=True"))]
            if i == 0:
                b.append(("downsample", seq("Sequential", numbered(
                    [conv(cin, width * 4, 1, s), bn(width * 4)]))))
            bl.append(seq("Bottleneck", b))
            cin = width * 4
        kids.append((f"layer{li + 1}", seq("Sequential", numbered(bl))))
    kids += [("avgpool", leaf("AdaptiveAvgPool2d", "output_size=(1, 1)")),
             ("fc", leaf("Linear", "in_features=2048, out_features=1000, bias=True"))]
    return seq("ResNet", kids)


def vgg16():
    feats, cin = [], 3
    for v in [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M",
              512, 512, 512, "M"]:
        if v == "M":
            feats.append(leaf("MaxPool2d", "kernel_size=2, stride=2, padding=0, dilation=1, "
                                           "ceil_mode=False"))
        else:
            feats += [conv(cin, v, 3, 1, 1, bias=True), leaf("ReLU", "inplace=True")]
            cin = v
    cls = [leaf("Linear", "in_features=25088, out_features=4096, bias=True"),
           leaf("ReLU", "inplace=True"), leaf("Dropout", "p=0.5, inplace=False"),
           leaf("Linear", "in_features=4096, out_features=4096, bias=True"),
           leaf("ReLU", "inplace=True"), leaf("Dropout", "p=0.5, inplace=False"),
           leaf("Linear", "in_features=4096, out_features=1000, bias=True")]
    return seq("VGG", [("features", seq("Sequential", numbered(feats))),
                       ("avgpool", leaf("AdaptiveAvgPool2d", "output_size=(7, 7)")),
                       ("classifier", seq("Sequential", numbered(cls)))])


def cna(cin, cout, k, s=1, groups=1, act="ReLU6", eps=None):
    """torchvision's Conv2dNormActivation: 'same' padding, no bias."""
    kids = [conv(cin, cout, k, s, (k - 1) // 2, groups), bn(cout, eps)]
    if act:
        kids.append(leaf(act, "inplace=True"))
    return seq("Conv2dNormActivation", numbered(kids))


def mobilenet_v2():
    feats, cin = [cna(3, 32, 3, 2)], 32
    for t, c, reps, s in [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                          (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]:
        for i in range(reps):
            hidden = cin * t
            layers = [cna(cin, hidden, 1)] if t != 1 else []
            layers += [cna(hidden, hidden, 3, s if i == 0 else 1, hidden),
                       conv(hidden, c, 1), bn(c)]
            feats.append(seq("InvertedResidual", [("conv", seq("Sequential",
                                                               numbered(layers)))]))
            cin = c
    feats.append(cna(320, 1280, 1))
    cls = [leaf("Dropout", "p=0.2, inplace=False"),
           leaf("Linear", "in_features=1280, out_features=1000, bias=True")]
    return seq("MobileNetV2", [("features", seq("Sequential", numbered(feats))),
                               ("classifier", seq("Sequential", numbered(cls)))])


def efficientnet_b0():
    eps = "0.001"
    feats, cin = [cna(3, 32, 3, 2, act="SiLU", eps=eps)], 32
    for t, k, s, cout, reps in [(1, 3, 1, 16, 1), (6, 3, 2, 24, 2), (6, 5, 2, 40, 2),
                                (6, 3, 2, 80, 3), (6, 5, 1, 112, 3), (6, 5, 2, 192, 4),
                                (6, 3, 1, 320, 1)]:
        stage = []
        for i in range(reps):
            stride, hidden = s if i == 0 else 1, cin * t
            block = [cna(cin, hidden, 1, act="SiLU", eps=eps)] if t != 1 else []
            sq = max(1, cin // 4)
            block += [cna(hidden, hidden, k, stride, hidden, act="SiLU", eps=eps),
                      seq("SqueezeExcitation", [
                          ("avgpool", leaf("AdaptiveAvgPool2d", "output_size=1")),
                          ("fc1", conv(hidden, sq, 1, bias=True)),
                          ("fc2", conv(sq, hidden, 1, bias=True)),
                          ("activation", leaf("SiLU", "inplace=True")),
                          ("scale_activation", leaf("Sigmoid"))]),
                      cna(hidden, cout, 1, act=None, eps=eps)]
            stage.append(seq("MBConv", [("block", seq("Sequential", numbered(block))),
                                        ("stochastic_depth",
                                         leaf("StochasticDepth", "p=0.0, mode=row"))]))
            cin = cout
        feats.append(seq("Sequential", numbered(stage)))
    feats.append(cna(320, 1280, 1, act="SiLU", eps=eps))
    cls = [leaf("Dropout", "p=0.2, inplace=True"),
           leaf("Linear", "in_features=1280, out_features=1000, bias=True")]
    return seq("EfficientNet", [("features", seq("Sequential", numbered(feats))),
                                ("avgpool", leaf("AdaptiveAvgPool2d", "output_size=1")),
                                ("classifier", seq("Sequential", numbered(cls)))])


def inception_v3():
    def basic(cin, cout, k, s=1, p=0):
        return seq("BasicConv2d", [("conv", conv(cin, cout, k, s, p)),
                                   ("bn", bn(cout, "0.001"))])

    def block(cls, convs):
        return seq(cls, [(n, basic(*a)) for n, a in convs])

    mp = leaf("MaxPool2d", "kernel_size=3, stride=2, padding=0, dilation=1, ceil_mode=False")
    kids = [("Conv2d_1a_3x3", basic(3, 32, 3, 2)), ("Conv2d_2a_3x3", basic(32, 32, 3)),
            ("Conv2d_2b_3x3", basic(32, 64, 3, 1, 1)), ("maxpool1", mp),
            ("Conv2d_3b_1x1", basic(64, 80, 1)), ("Conv2d_4a_3x3", basic(80, 192, 3)),
            ("maxpool2", mp)]
    cin = 192
    for name, pf in [("Mixed_5b", 32), ("Mixed_5c", 64), ("Mixed_5d", 64)]:
        kids.append((name, block("InceptionA", [
            ("branch1x1", (cin, 64, 1)), ("branch5x5_1", (cin, 48, 1)),
            ("branch5x5_2", (48, 64, 5, 1, 2)), ("branch3x3dbl_1", (cin, 64, 1)),
            ("branch3x3dbl_2", (64, 96, 3, 1, 1)), ("branch3x3dbl_3", (96, 96, 3, 1, 1)),
            ("branch_pool", (cin, pf, 1))])))
        cin = 64 + 64 + 96 + pf
    kids.append(("Mixed_6a", block("InceptionB", [
        ("branch3x3", (cin, 384, 3, 2)), ("branch3x3dbl_1", (cin, 64, 1)),
        ("branch3x3dbl_2", (64, 96, 3, 1, 1)), ("branch3x3dbl_3", (96, 96, 3, 2))])))
    cin = 768
    for name, c7 in [("Mixed_6b", 128), ("Mixed_6c", 160), ("Mixed_6d", 160),
                     ("Mixed_6e", 192)]:
        kids.append((name, block("InceptionC", [
            ("branch1x1", (cin, 192, 1)), ("branch7x7_1", (cin, c7, 1)),
            ("branch7x7_2", (c7, c7, (1, 7), 1, (0, 3))),
            ("branch7x7_3", (c7, 192, (7, 1), 1, (3, 0))),
            ("branch7x7dbl_1", (cin, c7, 1)),
            ("branch7x7dbl_2", (c7, c7, (7, 1), 1, (3, 0))),
            ("branch7x7dbl_3", (c7, c7, (1, 7), 1, (0, 3))),
            ("branch7x7dbl_4", (c7, c7, (7, 1), 1, (3, 0))),
            ("branch7x7dbl_5", (c7, 192, (1, 7), 1, (0, 3))),
            ("branch_pool", (cin, 192, 1))])))
    kids.append(("Mixed_7a", block("InceptionD", [
        ("branch3x3_1", (768, 192, 1)), ("branch3x3_2", (192, 320, 3, 2)),
        ("branch7x7x3_1", (768, 192, 1)), ("branch7x7x3_2", (192, 192, (1, 7), 1, (0, 3))),
        ("branch7x7x3_3", (192, 192, (7, 1), 1, (3, 0))),
        ("branch7x7x3_4", (192, 192, 3, 2))])))
    cin = 1280
    for name in ["Mixed_7b", "Mixed_7c"]:
        kids.append((name, block("InceptionE", [
            ("branch1x1", (cin, 320, 1)), ("branch3x3_1", (cin, 384, 1)),
            ("branch3x3_2a", (384, 384, (1, 3), 1, (0, 1))),
            ("branch3x3_2b", (384, 384, (3, 1), 1, (1, 0))),
            ("branch3x3dbl_1", (cin, 448, 1)), ("branch3x3dbl_2", (448, 384, 3, 1, 1)),
            ("branch3x3dbl_3a", (384, 384, (1, 3), 1, (0, 1))),
            ("branch3x3dbl_3b", (384, 384, (3, 1), 1, (1, 0))),
            ("branch_pool", (cin, 192, 1))])))
        cin = 2048
    kids += [("avgpool", leaf("AdaptiveAvgPool2d", "output_size=(1, 1)")),
             ("dropout", leaf("Dropout", "p=0.5, inplace=False")),
             ("fc", leaf("Linear", "in_features=2048, out_features=1000, bias=True"))]
    return seq("Inception3", kids)


def xception():
    """timm's Xception ('xception' up to 0.6, 'legacy_xception' later): each Block lists
    its 1x1 skip before the separable convolutions it runs first."""
    def sep(cin, cout):
        return seq("SeparableConv2d", [("conv1", conv(cin, cin, 3, 1, 1, cin)),
                                       ("pointwise", conv(cin, cout, 1))])

    kids = [("conv1", conv(3, 32, 3, 2)), ("bn1", bn(32)),
            ("act1", leaf("ReLU", "inplace=True")), ("conv2", conv(32, 64, 3)),
            ("bn2", bn(64)), ("act2", leaf("ReLU", "inplace=True"))]
    cin = 64
    blocks = ([(128, 2, 2, False, True), (256, 2, 2, True, True), (728, 2, 2, True, True)]
              + [(728, 3, 1, True, True)] * 8 + [(1024, 2, 2, True, False)])
    for bi, (cout, reps, stride, start_relu, grow_first) in enumerate(blocks):
        b = []
        if cout != cin or stride != 1:
            b += [("skip", conv(cin, cout, 1, stride)), ("skipbn", bn(cout))]
        rep = []
        for i in range(reps):
            inc = cin if i == 0 or not grow_first else cout
            outc = cout if grow_first or i == reps - 1 else cin
            rep += [leaf("ReLU", "inplace=True"), sep(inc, outc), bn(outc)]
        rep = rep[1:] if not start_relu else [leaf("ReLU")] + rep[1:]
        if stride != 1:
            rep.append(leaf("MaxPool2d", "kernel_size=3, stride=2, padding=1, dilation=1, "
                                         "ceil_mode=False"))
        b.append(("rep", seq("Sequential", numbered(rep))))
        kids.append((f"block{bi + 1}", seq("Block", b)))
        cin = cout
    kids += [("conv3", sep(1024, 1536)), ("bn3", bn(1536)),
             ("act3", leaf("ReLU", "inplace=True")), ("conv4", sep(1536, 2048)),
             ("bn4", bn(2048)), ("act4", leaf("ReLU", "inplace=True")),
             ("global_pool", leaf("SelectAdaptivePool2d ",
                                  "pool_type=avg, flatten=Flatten(start_dim=1, end_dim=-1)")),
             ("fc", leaf("Linear", "in_features=2048, out_features=1000, bias=True"))]
    return seq("Xception", kids)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    for name, tree in [("resnet50", resnet50()), ("vgg16", vgg16()),
                       ("mobilenet_v2", mobilenet_v2()), ("efficientnet_b0", efficientnet_b0()),
                       ("inception_v3", inception_v3()), ("xception", xception())]:
        with open(os.path.join(sys.argv[1], name + ".txt"), "w") as f:
            f.write("\n".join(render(tree)) + "\n")


if __name__ == "__main__":
    main()
