from tokprof.launch import entry

entry()
