#!/usr/bin/env python3
"""Writes layer tables (carma's summary CSV: type,out_elems,params) of three
torchvision ImageNet models at 224x224 -- vgg16, mobilenet_v2, resnet50 -- from
their published architectures (Simonyan & Zisserman 2015; Sandler et al. 2018;
He et al. 2016), so `carma eval-estimator` can compare estimates with the peaks
CARMA measured for them (data/workloads.csv). Per-sample output elements, one
row per module call, as torchinfo lists them. Usage: imagenet_tables.py OUTDIR"""
import os
import sys


class Net:
    def __init__(self, c, hw):
        self.rows = [("input", c * hw * hw, 0)]
        self.c, self.hw = c, hw

    def add(self, kind, params=0):
        self.rows.append((kind, self.c * self.hw * self.hw, params))

    def conv(self, cout, k, stride=1, groups=1, bias=False):
        params = cout * (self.c // groups) * k * k + (cout if bias else 0)
        self.c, self.hw = cout, (self.hw + stride - 1) // stride
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
                n.c, n.hw = cin, hw
                n.conv(width * 4, 1, stride=s), n.bn()
                n.c, n.hw = c_out, hw_out
            n.add("ReLU")
    n.pool("AdaptiveAvgPool2d", 1)
    n.linear(1000)
    return n.rows


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    for name, rows in [("vgg16", vgg16()), ("mobilenet_v2", mobilenet_v2()),
                       ("resnet50", resnet50())]:
        with open(os.path.join(sys.argv[1], name + ".csv"), "w") as f:
            f.write("type,out_elems,params\n")
            for kind, out, params in rows:
                f.write(f"{kind},{out},{params}\n")
        print(name, len(rows) - 1, "layers,", sum(r[2] for r in rows), "params")


if __name__ == "__main__":
    main()
