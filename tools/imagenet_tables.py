#!/usr/bin/env python3
"""Writes layer tables (carma's summary CSV: type,out_elems,params) of six
ImageNet models from their published architectures, so `carma eval-estimator`
can compare estimates with the peaks CARMA measured for them
(data/workloads.csv):
  vgg16            3x224x224  torchvision (Simonyan & Zisserman 2015)
  mobilenet_v2     3x224x224  torchvision (Sandler et al. 2018)
  resnet50         3x224x224  torchvision (He et al. 2016)
  inception_v3     3x299x299  torchvision, aux_logits=False (Szegedy et al. 2016)
  efficientnet_b0  3x224x224  torchvision (Tan & Le 2019)
  xception         3x224x224  timm <= 0.6 'xception', later 'legacy_xception'
                              (Chollet 2017); CARMA fed it 224 crops
Per-sample output elements, one row per leaf module call in forward order, as
torchinfo lists them; functional ops (F.relu, F.avg_pool2d, torch.cat,
torch.flatten, residual adds, SE scaling) are no rows, while module ones are
(timm's global pool holds an nn.Flatten: xception has a Flatten row).
Usage: imagenet_tables.py OUTDIR"""
import os
import sys


class Net:
    def __init__(self, c, hw):
        self.rows = [("input", c * hw * hw, 0)]
        self.c, self.hw = c, hw

    def at(self, c, hw):
        """Moves to another tensor (a branch's or a shortcut's input)."""
        self.c, self.hw = c, hw

    def add(self, kind, params=0):
        self.rows.append((kind, self.c * self.hw * self.hw, params))

    def conv(self, cout, k, stride=1, groups=1, bias=False, pad=None):
        """k: an int or (kh, kw); pad None: 'same' padding ((k - 1) // 2 each
        side, or the (kh, kw) padding that keeps the map square), else an
        int on every side."""
        kh, kw = k if isinstance(k, tuple) else (k, k)
        params = cout * (self.c // groups) * kh * kw + (cout if bias else 0)
        if pad is None:
            hw = (self.hw + stride - 1) // stride
        else:
            hw = (self.hw + 2 * pad - kh) // stride + 1
        self.c, self.hw = cout, hw
        self.add("Conv2d", params)

    def bn(self):
        self.add("BatchNorm2d", 2 * self.c)

    def pool(self, kind, out_hw):
        self.hw = out_hw
        self.add(kind)

    def linear(self, cout):
        cin = self.c * self.hw * self.hw
        self.c, self.hw = cout, 1
        self.add("Linear", cin * cout + cout)


def vgg16():
    n = Net(3, 224)
    for v in [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M",
              512, 512, 512, "M"]:
        if v == "M":
            n.pool("MaxPool2d", n.hw // 2)
        else:
            n.conv(v, 3, bias=True)
            n.add("ReLU")
    n.pool("AdaptiveAvgPool2d", 7)
    n.linear(4096), n.add("ReLU"), n.add("Dropout")
    n.linear(4096), n.add("ReLU"), n.add("Dropout")
    n.linear(1000)
    return n.rows


def mobilenet_v2():
    n = Net(3, 224)
    n.conv(32, 3, stride=2), n.bn(), n.add("ReLU6")
    for t, c, reps, s in [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                          (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]:
        for i in range(reps):
            hidden = n.c * t
            if t != 1:
                n.conv(hidden, 1), n.bn(), n.add("ReLU6")
            n.conv(hidden, 3, stride=s if i == 0 else 1, groups=hidden), n.bn(), n.add("ReLU6")
            n.conv(c, 1), n.bn()
    n.conv(1280, 1), n.bn(), n.add("ReLU6")
    n.pool("AdaptiveAvgPool2d", 1)
    n.add("Dropout")
    n.linear(1000)
    return n.rows


def resnet50():
    n = Net(3, 224)
    n.conv(64, 7, stride=2), n.bn(), n.add("ReLU")
    n.pool("MaxPool2d", 56)
    for width, blocks, stride in [(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)]:
        for i in range(blocks):
            s = stride if i == 0 else 1
            cin, hw = n.c, n.hw
            n.conv(width, 1), n.bn(), n.add("ReLU")
            n.conv(width, 3, stride=s), n.bn(), n.add("ReLU")
            n.conv(width * 4, 1), n.bn()
            if i == 0:  # projection shortcut, from the block's input
                c_out, hw_out = n.c, n.hw
                n.at(cin, hw)
                n.conv(width * 4, 1, stride=s), n.bn()
                n.at(c_out, hw_out)
            n.add("ReLU")
    n.pool("AdaptiveAvgPool2d", 1)
    n.linear(1000)
    return n.rows


def inception_v3():
    # BasicConv2d = Conv2d(bias=False) + BatchNorm2d; its ReLU is F.relu, and
    # the pools inside the Mixed blocks are F.avg_pool2d / F.max_pool2d: no rows.
    n = Net(3, 299)

    def basic(cout, k, stride=1, pad=None):
        n.conv(cout, k, stride=stride, pad=pad), n.bn()

    def branch(x, convs):
        """Runs BasicConv2d's (basic() argument tuples) on tensor x = (c, hw)
        and returns the branch's output channels; n is left at its output."""
        n.at(*x)
        for args in convs:
            basic(*args)
        return n.c

    basic(32, 3, 2, 0)  # Conv2d_1a_3x3: 149
    basic(32, 3, 1, 0)  # Conv2d_2a_3x3: 147
    basic(64, 3, 1, 1)  # Conv2d_2b_3x3: 147
    n.pool("MaxPool2d", (n.hw - 3) // 2 + 1)  # maxpool1: 73
    basic(80, 1)  # Conv2d_3b_1x1
    basic(192, 3, 1, 0)  # Conv2d_4a_3x3: 71
    n.pool("MaxPool2d", (n.hw - 3) // 2 + 1)  # maxpool2: 35
    for pool_features in [32, 64, 64]:  # Mixed_5b..5d (InceptionA)
        x = (n.c, n.hw)
        c = sum([branch(x, [(64, 1)]),
                 branch(x, [(48, 1), (64, 5)]),
                 branch(x, [(64, 1), (96, 3), (96, 3)]),
                 branch(x, [(pool_features, 1)])])  # after F.avg_pool2d 3/1/1
        n.at(c, x[1])
    x = (n.c, n.hw)  # Mixed_6a (InceptionB): 35 -> 17
    c = sum([branch(x, [(384, 3, 2, 0)]),
             branch(x, [(64, 1), (96, 3), (96, 3, 2, 0)]),
             x[0]])  # F.max_pool2d 3/2
    n.at(c, (x[1] - 3) // 2 + 1)
    for c7 in [128, 160, 160, 192]:  # Mixed_6b..6e (InceptionC)
        x = (n.c, n.hw)
        c = sum([branch(x, [(192, 1)]),
                 branch(x, [(c7, 1), (c7, (1, 7)), (192, (7, 1))]),
                 branch(x, [(c7, 1), (c7, (7, 1)), (c7, (1, 7)), (c7, (7, 1)),
                            (192, (1, 7))]),
                 branch(x, [(192, 1)])])
        n.at(c, x[1])
    x = (n.c, n.hw)  # Mixed_7a (InceptionD): 17 -> 8
    c = sum([branch(x, [(192, 1), (320, 3, 2, 0)]),
             branch(x, [(192, 1), (192, (1, 7)), (192, (7, 1)), (192, 3, 2, 0)]),
             x[0]])  # F.max_pool2d 3/2
    n.at(c, (x[1] - 3) // 2 + 1)
    for _ in range(2):  # Mixed_7b, 7c (InceptionE)
        x = (n.c, n.hw)
        c = branch(x, [(320, 1)])
        branch(x, [(384, 1)])
        y = (n.c, n.hw)  # the 1x3 and the 3x1 both read it, then torch.cat
        c += branch(y, [(384, (1, 3))]) + branch(y, [(384, (3, 1))])
        branch(x, [(448, 1), (384, 3)])
        y = (n.c, n.hw)
        c += branch(y, [(384, (1, 3))]) + branch(y, [(384, (3, 1))])
        c += branch(x, [(192, 1)])
        n.at(c, x[1])
    n.pool("AdaptiveAvgPool2d", 1)
    n.add("Dropout")
    n.linear(1000)
    return n.rows


def efficientnet_b0():
    n = Net(3, 224)
    n.conv(32, 3, stride=2), n.bn(), n.add("SiLU")
    for t, k, s, cout, reps in [(1, 3, 1, 16, 1), (6, 3, 2, 24, 2), (6, 5, 2, 40, 2),
                                (6, 3, 2, 80, 3), (6, 5, 1, 112, 3), (6, 5, 2, 192, 4),
                                (6, 3, 1, 320, 1)]:
        for i in range(reps):
            cin, stride = n.c, s if i == 0 else 1
            hidden = cin * t
            if t != 1:
                n.conv(hidden, 1), n.bn(), n.add("SiLU")
            n.conv(hidden, k, stride=stride, groups=hidden), n.bn(), n.add("SiLU")
            hw = n.hw  # SqueezeExcitation; its x * scale is no row
            n.pool("AdaptiveAvgPool2d", 1)
            n.conv(max(1, cin // 4), 1, bias=True), n.add("SiLU")
            n.conv(hidden, 1, bias=True), n.add("Sigmoid")
            n.at(hidden, hw)
            n.conv(cout, 1), n.bn()
            if stride == 1 and cin == cout:  # called only with the residual add
                n.add("StochasticDepth")
    n.conv(1280, 1), n.bn(), n.add("SiLU")
    n.pool("AdaptiveAvgPool2d", 1)
    n.add("Dropout")
    n.linear(1000)
    return n.rows


def xception():
    n = Net(3, 224)

    def sep(cout):  # SeparableConv2d(3, 1, 1): depthwise 3x3 then pointwise 1x1
        n.conv(n.c, 3, groups=n.c), n.conv(cout, 1)

    n.conv(32, 3, stride=2, pad=0), n.bn(), n.add("ReLU")  # 111
    n.conv(64, 3, pad=0), n.bn(), n.add("ReLU")  # 109
    for cout, reps, stride, start_relu, grow_first in (
            [(128, 2, 2, False, True), (256, 2, 2, True, True), (728, 2, 2, True, True)]
            + [(728, 3, 1, True, True)] * 8 + [(1024, 2, 2, True, False)]):
        cin, hw = n.c, n.hw
        for i in range(reps):  # rep, from the block's input
            if i > 0 or start_relu:
                n.add("ReLU")
            sep(cout if grow_first or i == reps - 1 else cin)
            n.bn()
        if stride != 1:
            n.pool("MaxPool2d", (n.hw + 2 - 3) // stride + 1)
        if cout != cin or stride != 1:  # skip, from the block's input
            c_out, hw_out = n.c, n.hw
            n.at(cin, hw)
            n.conv(cout, 1, stride=stride, pad=0), n.bn()
            n.at(c_out, hw_out)
    sep(1536), n.bn(), n.add("ReLU")
    sep(2048), n.bn(), n.add("ReLU")
    # SelectAdaptivePool2d('avg', flatten=True): nn.AdaptiveAvgPool2d, nn.Flatten
    n.pool("AdaptiveAvgPool2d", 1)
    n.add("Flatten")
    n.linear(1000)
    return n.rows


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    for name, rows in [("vgg16", vgg16()), ("mobilenet_v2", mobilenet_v2()),
                       ("resnet50", resnet50()), ("inception_v3", inception_v3()),
                       ("efficientnet_b0", efficientnet_b0()), ("xception", xception())]:
        with open(os.path.join(sys.argv[1], name + ".csv"), "w") as f:
            f.write("type,out_elems,params\n")
            for kind, out, params in rows:
                f.write(f"{kind},{out},{params}\n")
        print(name, len(rows) - 1, "layers,", sum(r[2] for r in rows), "params")


if __name__ == "__main__":
    main()
