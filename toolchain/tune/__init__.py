"""The schedule tuner (minirt-tune) and the tuning database minirt-build reads.

Where the rules (toolchain/loops/rules.py) cannot decide between the tiles their cost
model ranks close, or between the kernel families their thresholds choose from, the
tuner measures: each candidate schedule of a layer is built into
the model's firmware and its instructions counted under QEMU (exact, so one run per
candidate), the outputs checked bit-exact against the reference; the best per (layer
shape, target) goes into a tuning database that later builds look up.

The database, its key and the rules' lookup are toolchain/tunedb (a low layer, read by
every build); this package is the tuner, which builds and runs firmware:

- candidates.py: which of the rules' candidates a layer's tuning measures;
- measure.py: one candidate, one firmware, one QEMU run;
- pool.py / ray_pool.py: running the measurements on local cores or a Ray cluster;
- tuner.py: a model's tuning, end to end (the CLI is toolchain/cli/tune.py).
"""
