"""The statistics engine over FED tables (docs/definitions.md#statistics): metrics, intervals, the bootstrap, pairs.

Holds :mod:`.metrics` (prefix-executability metrics of one block), :mod:`.intervals` (Wilson and
Hoeffding), :mod:`.aggregates` (per-task sums every metric is a ratio of), :mod:`.bootstrap` (the
vectorised percentile bootstrap), :mod:`.settings` (a run's settings, one frozen object, and the checks of
its input), :mod:`.stats` (the long stats table of every block), :mod:`.categories` (its rows per task
category), :mod:`.paired` (paired condition-minus-baseline differences), :mod:`.labels` (FED beside human
step labels) and :mod:`.curves` (a block's whole PEC curve with its band, for the browser).

May import: :mod:`prefix_audit.core` only; it knows no benchmark and no replay. Public:
:mod:`.settings`, :mod:`.stats`, :mod:`.categories`, :mod:`.paired`, :mod:`.labels`, :mod:`.curves`, :mod:`.metrics`,
:mod:`.intervals`; :mod:`.aggregates` and :mod:`.bootstrap` are internal (an import-linter contract keeps them so).
"""
