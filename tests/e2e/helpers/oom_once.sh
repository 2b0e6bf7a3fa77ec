#!/bin/sh
# Prints a real PyTorch OOM message and exits 1 on its first run (marker file
# absent), succeeds afterwards. Usage: oom_once.sh MARKER
if [ ! -e "$1" ]; then
    : > "$1"
    cat >&2 <<'MSG'
Traceback (most recent call last):
  File "train.py", line 42, in <module>
    loss.backward()
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 39.39 GiB of which 1.12 GiB is free. Of the allocated memory 36.12 GiB is allocated by PyTorch, and 1.02 GiB is reserved by PyTorch but unallocated.
MSG
    exit 1
fi
echo "trained fine"
