"""Memory mappings of store data: how each is populated (``mmappolicy``,
over ``_populate.c``) and the population session of each running command
(``sessions``)."""
