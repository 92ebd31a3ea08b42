"""The end-to-end tier: the whole install on a real kube-apiserver, etcd and Cluster API (the test bed)."""
