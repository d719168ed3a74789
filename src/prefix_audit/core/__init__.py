"""The rollout record and the boundary with the outside world: what every other layer shares.

Holds :mod:`.records` (the rollout record, one JSON object per line, and the located ``BadLine`` of a
record that cannot be read), :mod:`.recorded` (what a log recorded about a rollout: the
replies to its calls, its verdict, its faults), :mod:`.calls` (model-emitted tool calls parsed with :mod:`ast`, never
evaluated), :mod:`.decode` (external bytes → values, with located errors: the one boundary every
importer uses), :mod:`.reading` (the kit importers read logs
with: a call ledger pairing calls with replies, typed access to untrusted JSON, one bad-record exception
family, message roles), :mod:`.compressed` (a file's bytes, compressed ones read as the plain ones),
:mod:`.json_text` (JSON text that ends inside its value), :mod:`.cut_off` (a log file whose content ends
inside its JSON or its zip archive), :mod:`.archives` (a tar of a run
folder, or a compressed file a reader must open by name, unpacked safely), :mod:`.quarantine`
(quarantined records summed up by cause), :mod:`.io` (atomic, byte-deterministic output and commits of file sets),
:mod:`.output_tree` (an output folder replaced whole: built beside the old one, swapped in as one step),
:mod:`.taxonomy` (the five first-failure categories), :mod:`.health` (benchmark health's finding codes
and the schemas of its tables), :mod:`.labels` (human step labels, read as
published), :mod:`.framework_samples` (a sample of an
evaluation framework's log in plain terms), :mod:`.fetch` (a pinned wheel from PyPI, unpacked) and
:mod:`.parallel` (work spread over processes, results in input order, and a progress display).

May import: nothing of prefix_audit outside itself. Public: every module.
"""
