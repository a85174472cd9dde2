"""`lab k8s`: deploy/k8s run for real on a single-node cluster built on this machine (lab.k8s)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from lab.cli.common import opt_int

DESCRIPTION = """\
Runs deploy/k8s -- the Indexed Job of N shards of `lab chaos` and the merge Job -- on a real
single-node Kubernetes cluster built on this machine from parts the registries serve, and
prints the merged verdict as `lab merge` prints it. Needs root and a checkout.

  run     build what is missing (once: Kubernetes from the Go module proxy, about 6 min; the
          images, about 3 min), start etcd, the control plane, containerd and the kubelet,
          load the images without a registry, run the shards and the merge, copy the results
          to reports/k8s-<time>-s<seed>-<N>shards/, and remove the cluster (also on Ctrl-C)
  check   no kubelet: the manifests applied to a real API server (a server-side dry run, then
          for real) and the Job controller's pods inspected (index, env, volumes, pull policy)
  down    remove what a killed run left (processes, mounts, cgroups, the pods' bridge, files)
  build   only build the Kubernetes programs into the lab's cache

exit status of run: the merge's (0 valid; 1 the correct profile lost, a cell unexercised, or the
cluster left something behind; 2 shards that do not belong together); of check: 0 when the pods
are as a run needs.

  make k8s SHARDS=3                  lab k8s run --shards 3
  lab k8s run --shards 2 --trials 3  a smaller run
  make k8s-check                     lab k8s check
"""


def add(sub: Any) -> None:
    k = sub.add_parser(
        "k8s",
        help="run deploy/k8s's shards on a single-node cluster built here",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    k.add_argument("action", choices=("run", "check", "down", "build"), help="what to do (see above)")
    k.add_argument("--shards", type=opt_int("--shards", 1, 16), default=None, metavar="N", help="shards (default 3)")
    k.add_argument("--seed", type=opt_int("--seed", 0, 2**31 - 1), default=None, help="the run's seed (default 42)")
    k.add_argument("--trials", type=opt_int("--trials", 1, 1000), default=None, metavar="N",
                   help="trials per cell (default 5, as deploy/k8s)")  # fmt: skip
    k.add_argument("--deadline", type=opt_int("--deadline", 60, 86400), default=None, metavar="S",
                   help="seconds the shards may take (default 7200)")  # fmt: skip
    k.add_argument("--keep", action="store_true", help="keep the cluster's state folder (logs, configs) after the run")
    k.add_argument("--reports", default="reports", metavar="DIR", help="where the results are copied")
    k.add_argument("--manifests", default=None, metavar="DIR",
                   help="the manifests to run or check (default: the checkout's deploy/k8s)")  # fmt: skip
    k.set_defaults(func=run_k8s, long_running=True)


def run_k8s(args: argparse.Namespace) -> int:
    import os

    from lab.common.errors import UsageError

    if os.geteuid() != 0:
        raise UsageError("lab k8s starts containerd and a kubelet: it needs root", "run it as root (sudo)")
    from lab.common.config import cache_dir
    from lab.k8s import binaries, run
    from lab.k8s.node import Node

    shards = args.shards or 3
    if args.action == "build":
        print(binaries.ensure(cache_dir()))
        return 0
    if args.action == "down":
        done, left = Node(run.state_dir(), binaries.bin_dir(cache_dir())).down()
        print("\n".join(done) or "nothing to stop")
        print("\n".join(f"LEFT BEHIND: {x}" for x in left) or "nothing left behind")
        return 1 if left else 0
    folder = run.manifests_dir(args.manifests)
    if args.action == "check":
        return run.check(folder, shards)
    return run.run(folder, shards, 42 if args.seed is None else args.seed, args.trials or 5,
                   float(args.deadline or 7200), args.keep, Path(args.reports))  # fmt: skip
