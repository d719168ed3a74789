"""What people read: the paper's tables, the figures and the static HTML site.

Holds :mod:`.tables` (CSV, Markdown and LaTeX from the stats and paired tables), :mod:`.figures`
(PNG and PDF), :mod:`.view` (``prefix-audit view``: the offline site, from the Jinja2 templates in
``templates/site/``) and :mod:`.glossary` (every term the site and docs/glossary.md define, once).

May import: :mod:`prefix_audit.statistics`, :mod:`prefix_audit.replay` and :mod:`prefix_audit.core`.
Public: every module.
"""
