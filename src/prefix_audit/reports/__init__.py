"""What people read: the paper's tables, the figures and the static HTML site.

Holds :mod:`.tables` (the set of tables, each a spec: its builder, caption and note) with the tables of the
statistics (:mod:`.block_tables`: G.1, F.1, F.2, F.3, ...) and of an audit's trust, health and labels
(:mod:`.audit_tables`), rendered as CSV, Markdown and LaTeX by :mod:`.table_render`; :mod:`.figures` (PNG
and PDF), drawn by family in worker processes by :mod:`.figure_families`; :mod:`.view` (``prefix-audit view``:
the offline site, from the Jinja2 templates in ``templates/site/``) with its parts — :mod:`.glance` (where
agents break: shares, tools, the PEC and FED plots as SVG), :mod:`.block_pages` (a block's pages, rendered in
worker processes), :mod:`.rollout_page` (one rollout's page) and :mod:`.pages` (the templates' environment and
filters) —, :mod:`.glossary` (every term the site and docs/glossary.md define, once) and :mod:`.palette` (the
colours of every figure and page).

May import: :mod:`prefix_audit.statistics`, :mod:`prefix_audit.replay` and :mod:`prefix_audit.core`.
Public: every module.
"""
