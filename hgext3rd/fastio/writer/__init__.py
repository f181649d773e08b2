"""Writing files: the :class:`~.filewriter.FileWriter` an apply hands its
new files and its closes to, and the three ways it writes them
(``writestrategy``): on the applying thread (``writeinline``), on Python
threads (``writethreads``), on the C pool (``writepool`` over
``_writepool.c``, threads that never take the GIL).  ``newfile`` is the one
way a file is created in Python; ``signals`` holds Ctrl-C while a
descriptor is known to no one else; ``vfsclose`` serves Mercurial's own
``vfs.backgroundclosing`` with a file writer."""
