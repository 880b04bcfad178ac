from treenets.cli import main

raise SystemExit(main())
