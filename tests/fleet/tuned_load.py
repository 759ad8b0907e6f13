#!/usr/bin/env python3
"""Load a TuneD profile with TuneD's own loader (Debian's `tuned` package) and print it as JSON.

usage: tuned_load.py DIR[:DIR...] PROFILE

DIRs are the profile directories, searched as TuneD searches them (the last one wins), e.g.
/usr/lib/tuned:/tmp/x for the shipped profiles plus a generated one in /tmp/x/PROFILE.
Exit 1 when the loader refuses the profile: what TuneD would refuse too.
"""
import json
import sys

import tuned.profiles.factory
import tuned.profiles.loader
import tuned.profiles.locator
import tuned.profiles.merger
import tuned.profiles.variables
from tuned.profiles.exceptions import InvalidProfileException
from tuned.utils.global_config import GlobalConfig


def main():
    dirs, name = sys.argv[1].split(":"), sys.argv[2]
    loader = tuned.profiles.loader.Loader(
        tuned.profiles.locator.Locator(dirs),
        tuned.profiles.factory.Factory(),
        tuned.profiles.merger.Merger(),
        GlobalConfig(),
        tuned.profiles.variables.Variables(),
    )
    try:
        profile = loader.load([name])
    except InvalidProfileException as e:
        print(f"TuneD refused the profile: {e}", file=sys.stderr)
        return 1
    units = {u: dict(profile.units[u].options) for u in profile.units}
    json.dump({"name": profile.name, "summary": profile.options.get("summary"), "units": units}, sys.stdout, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
