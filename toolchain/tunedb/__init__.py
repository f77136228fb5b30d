"""The tuning database as builds read it: what minirt-tune (toolchain/tune) measured best
per (layer shape, target), looked up where the rules pick a layer's tile.

- key.py: the stable key of a layer's loop nest (shape, element types, target);
- database.py: the files (shipped defaults.json, a user file), their precedence, and the
  build session the rules consult;
- hook.py: the rules' one call (loops/rules.py _reduction_nest).

A layer below `loops` (docs/architecture.md, "Layers"): the rules and the pipeline read
it; the tuner, which builds and runs firmware, sits at the top with the commands.
"""
