#!/usr/bin/python3
"""Writes, for twenty torchvision ImageNet models, what print(model) prints
(NAME.txt) and the layer table a forward pass gives (NAME.csv, carma's layer CSV:
one row per leaf-module call in forward order, per-sample output elements, each
module's own parameters on its first call, as torchinfo lists them), plus
index.csv: each model's input size and the elements per sample that its
torch.cat calls with two or more inputs produce.

Needs PyTorch and torchvision (Debian: apt-get install python3-torchvision,
then run with /usr/bin/python3). The files in data/estimator/torchvision-zoo/
were written with torch 1.13.1 and torchvision 0.14.1 (repeated children
printed one by one, as torch before 2.0 prints them).
Usage: torchvision_zoo.py OUTDIR"""
import os
import sys

import torch
import torchvision

MODELS = ["resnet18", "resnet50", "resnext50_32x4d", "wide_resnet50_2", "vgg16", "alexnet",
          "mobilenet_v2", "mobilenet_v3_large", "mobilenet_v3_small", "mnasnet1_0",
          "efficientnet_b0", "efficientnet_v2_s", "regnet_x_400mf", "regnet_y_400mf",
          "densenet121", "googlenet", "inception_v3", "shufflenet_v2_x1_0", "squeezenet1_0",
          "convnext_tiny"]
CATS = []
_cat = torch.cat


def recording_cat(tensors, *args, **kwargs):
    r = _cat(tensors, *args, **kwargs)
    if len(tensors) > 1:
        CATS.append(r[0].numel())
    return r


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    torch.cat = recording_cat
    index = ["summary,image_size,cat_elems"]
    for name in MODELS:
        size = 299 if name == "inception_v3" else 224
        kw = {}
        if name in ("googlenet", "inception_v3"):
            kw = dict(aux_logits=False, init_weights=False)
        m = getattr(torchvision.models, name)(**kw).eval()
        with open(os.path.join(out, name + ".txt"), "w") as f:
            f.write(repr(m) + "\n")
        rows, seen = [("input", 3 * size * size, 0)], set()

        def hook(mod, inp, outp):
            o = outp[0] if isinstance(outp, (tuple, list)) else outp
            p = 0
            if id(mod) not in seen:
                seen.add(id(mod))
                p = sum(x.numel() for x in mod.parameters(recurse=False))
            rows.append((type(mod).__name__, o[0].numel(), p))

        for mod in m.modules():
            if not list(mod.children()):
                mod.register_forward_hook(hook)
        CATS.clear()
        with torch.no_grad():
            m(torch.zeros(1, 3, size, size))
        with open(os.path.join(out, name + ".csv"), "w") as f:
            f.write("type,out_elems,params\n")
            f.writelines("%s,%d,%d\n" % r for r in rows)
        index.append(f"{name}.txt,{size},{sum(CATS)}")
        print(name, len(rows) - 1, "rows")
    with open(os.path.join(out, "index.csv"), "w") as f:
        f.write("\n".join(index) + "\n")


if __name__ == "__main__":
    main()
