"""`furiosa-opt tune`: search a kernel's declared choices for the shortest makespan (docs/tuning.md).

`space` is what a kernel module imports (`from furiosa_opt.tune import space`) and is all this package
loads on import (from `choices`); the search (`search`), its trials (`trial`), where they run
(`executors`) and the study file (`study`) are imported by the command.
"""

from furiosa_opt.tune.choices import Space, space

__all__ = ["Space", "space"]
