"""The transaction an apply runs in: the paths it creates recorded before
they exist (``newpaths``) and removed on rollback, in the process or by
``hg recover`` (``recovery``); what it wrote flushed before it commits
under ``fastio.durable`` (``durable``)."""
