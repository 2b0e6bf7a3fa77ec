#!/bin/sh
sleep 0
python /x/src/submit.py --task /x/workloads/a.rad
sleep 10

python3 /y/submit.py --task b.rad
sleep 2.5
