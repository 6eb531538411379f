from tokprof.cli import main

raise SystemExit(main())
