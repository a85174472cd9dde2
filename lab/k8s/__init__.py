"""`lab k8s`: deploy/k8s run for real on a single-node Kubernetes cluster built on this machine
from parts the registries serve -- kube-apiserver, kube-controller-manager, kube-scheduler,
kubelet and kubectl built from the Go module proxy (lab.k8s.binaries), Debian's etcd,
containerd, runc and CNI plugins (lab.k8s.node), the lab's images loaded into containerd without
a registry (lab.k8s.images) -- then the Indexed Job of N shards and the merge Job
(lab.k8s.jobs), and everything it started stopped and removed.

May import: lab.common, lab.stack.
"""
