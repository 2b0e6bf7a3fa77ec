#!/usr/bin/env python3
"""How far can any estimator get on GPUMemNet's early CNN set? A diagnostic, not
part of carma: it fits a gradient-boosted regressor (scikit-learn) on features a
summary gives (batch, per-layer output elements and parameters) plus the
generator's own labels that a summary does not give (architecture family,
activation, input size, base filters, dropout and BatchNorm switches), with the
same 5-fold protocol as `carma eval-estimator`, and prints MAE and the 8 GB class
accuracy. It then prints the 8 GB accuracy a perfect model would reach if each
peak only wobbled by a relative noise of s, which tells how tight any model must
be to pass 0.95.

Needs python3-numpy and python3-sklearn (Debian). Usage:
  tools/cnn_ceiling.py [data/estimator/gpumemnet-cnn-early.csv]"""
import ast
import csv
import re
import sys

import numpy as np
from sklearn.ensemble import GradientBoostingRegressor
from sklearn.model_selection import KFold

ARCHS = ["uniform", "pyramid", "residual", "bottleneck", "dense", "gradual", "hourglass"]
ACTS = ["relu", "leaky_relu", "prelu", "elu", "selu", "gelu", "tanh", "swish", "softplus", "mish"]


def label(name, key, pattern=r"([0-9.]+)"):
    m = re.search(key + ":" + pattern, name)
    return m.group(1) if m else None


def features(row):
    layers = ast.literal_eval(row["Activations-Params"])
    if not layers:
        return None
    name = row["Filename"]
    batch = float(label(name, "batch"))
    size = float(label(name, "input_size"))
    chans = float(label(name, "input_channels"))
    arch = label(name, "arch", r"([a-z]+)")
    act = label(name, "act", r"([a-z_]+?)_dropout")
    acts = [a for _, a, _ in layers]
    convs = [a for t, a, _ in layers if t.lower() == "conv2d"]
    params = sum(p for _, _, p in layers)
    # im2col-sized buffer of each 3x3 convolution: its input x 9
    prev, im2col = chans * size * size, []
    for t, a, _ in layers:
        if t.lower() == "conv2d":
            im2col.append(prev * 9)
        prev = a
    f = [batch, size, chans, float(label(name, "base_filters")), float(label(name, "depth")),
         float(label(name, "num_classes")), float("dropout:True" in name),
         float("batchnorm:True" in name), params, len(layers), len(convs),
         batch * sum(acts), batch * sum(convs), batch * max(acts),
         batch * (max(convs) if convs else 0), batch * (max(im2col) if im2col else 0),
         batch * sum(im2col), batch * chans * size * size]
    f += [float(arch == a) for a in ARCHS]
    f += [float(act == a) for a in ACTS]
    return f


def acc8(pred, peak):
    return float(np.mean(np.floor(pred / 8192) == np.floor(peak / 8192)))


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "data/estimator/gpumemnet-cnn-early.csv"
    X, y = [], []
    with open(path, newline="") as fh:
        for row in csv.DictReader(fh):
            if row["Status"] != "SUCCESSFUL":
                continue
            f = features(row)
            peak = float(row["Max GPU Memory (MiB)"])
            if f is None or peak <= 0:
                continue
            X.append(f)
            y.append(peak)
    X, y = np.array(X), np.array(y)
    pred = np.zeros_like(y)
    for train, test in KFold(5, shuffle=True, random_state=1).split(X):
        m = GradientBoostingRegressor(n_estimators=600, max_depth=4, learning_rate=0.05,
                                      subsample=0.8, random_state=0)
        m.fit(X[train], np.log(y[train]))
        pred[test] = np.exp(m.predict(X[test]))
    print(f"{len(y)} successful runs; gradient boosting with the generator's labels, 5-fold:")
    print(f"  MAE {np.mean(np.abs(pred - y)):.0f} MiB, MAPE {np.mean(np.abs(pred - y) / y):.3f}, "
          f"acc@8GB {acc8(pred, y):.3f}")
    rng = np.random.default_rng(0)
    print("a perfect model under relative noise s (20 draws each):")
    for s in (0.02, 0.03, 0.05, 0.08):
        a = np.mean([acc8(y * (1 + rng.normal(0, s, len(y))), y) for _ in range(20)])
        print(f"  s = {s:.2f}: acc@8GB {a:.3f}")


if __name__ == "__main__":
    main()
