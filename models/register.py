"""List the model folders beside this script in treenets' zoo registry (`src/treenets/zoo/zoo.json`): each file's
sha256 and size, and download URLs under `--url-base` once a release publishes the folders (as `NAME/FILE`); with
URLs, an installed treenets downloads a model at its first use (until then: `treenets models download --from`).

    python models/register.py [--url-base https://.../v0.4/models]
"""

import argparse
from pathlib import Path

from treenets.zoo import registry as zoo

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url-base", default="", help="where a release publishes NAME/FILE (default: none yet)")
    args = parser.parse_args()
    folders = sorted(p for p in Path(__file__).parent.iterdir()
                     if (p / "model.safetensors").is_file() or (p / zoo.ENSEMBLE_FILES[0]).is_file())
    zoo.write_registry(folders, args.url_base)
    print(f"registered {', '.join(f.name for f in folders)}")
