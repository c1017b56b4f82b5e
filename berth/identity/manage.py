"""``keystone-manage``'s set-up steps, several in one child process.

Each ``keystone-manage`` run spends about a second importing Keystone before a step that takes
a fraction of that (a fresh schema, two key repositories, the bootstrap admin). Here the steps
arrive on stdin as a JSON list of argument lists and run one after another on one import;
oslo.config's process-wide object is cleared between them, as a new process would have it.
A step that fails ends the process with its error, as ``keystone-manage`` does.
"""

from __future__ import annotations

import json
import sys

from berth.identity import deferred_saml


def main() -> None:
    steps: list[list[str]] = json.load(sys.stdin)
    deferred_saml.defer()
    from keystone.cmd import cli

    for arguments in steps:
        cli.CONF.clear()
        cli.main(argv=["keystone-manage", *arguments], developer_config_file=None)


if __name__ == "__main__":
    main()
