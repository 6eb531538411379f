from tokprof.frontends.launch import entry

entry()
