"""Bundle files and servers: bundle files read and written in large calls
(``bundleio``), store files and revlogs read in large calls while a stream
or a changegroup is generated (``serving``), and what a threaded server's
requests may load, loaded before they run (``preload``)."""
