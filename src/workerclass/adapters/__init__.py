"""Adapters: the only places that touch files, TLS material or a Kubernetes API.

- :mod:`.helm`: Helm's own engine (the optional ``helm`` extra) for a chart the port was not proved against.
- :mod:`.changes`: a change notification (:class:`~.changes.Changes`: a version counter whose
  waiters wake on a change, bursts gathered by a debounce), what the controller's loops wait on.
- :mod:`.chart`: a Helm chart read from a folder or a packaged archive into ``{path: bytes}``
  (:func:`~.chart.read_chart`, :func:`~.chart.chart_archive_files`), what the core identifies.
- :mod:`.chart_gate`: a gated chart written whole or not at all (:func:`~.chart_gate.write_gated`:
  a temporary copy beside the destination, read back and identified, then renamed into place).
- :mod:`.flux`: the chart the cluster's pools run, read through Flux's source API
  (:class:`~.flux.ChartFollower`: the ApplicationDefinition's chartRef, the artifact checked against its
  digest), kept current for the cluster cache.
- :mod:`.folder`: STATE from disk (folders, files, stdin of YAML/JSON manifests) and
  :func:`~.folder.load_state`; errors name the file and the line.
- :mod:`.kube`: the cluster cache (:class:`~.kube.ClusterCache`): list and watch the resources of
  the API table (:data:`workerclass.api.WATCHED`, the controller's
  :data:`workerclass.api.CONTROLLER_READS`), keep a State current per event, announce each new
  State (:meth:`~.kube.ClusterCache.changed`), say when it is stale;
  :func:`~.kube.short_error` reduces client errors to code and reason.
- :mod:`.live`: the webhook installation read once from the API server for ``preflight --live``
  (:func:`~.live.read_install`: webhook configurations, the Services, Deployments and
  PodDisruptionBudgets they call, Namespaces and pools for a namespaceSelector, the Kairos
  provider's CRD).
- :mod:`.kubeconfig`: where the command line connects (:func:`~.kubeconfig.load_kubeconfig`: a
  kubeconfig, ``KUBECONFIG``, in-cluster) and its one-line errors (:class:`~.kubeconfig.LiveError`).
- :mod:`.sync`: how current a source is (:class:`~.sync.SyncReport`, :func:`~.sync.age_report`)
  and :func:`~.sync.where` (a bug's location without its values), shared with the webhook.
- :mod:`.tls`: a server SSLContext that follows certificate rotation.
- :mod:`.transport`: lightkube's requests carried by aiohttp (:class:`~.transport.AiohttpTransport`):
  the clients of ``serve webhook`` and ``serve controller`` send through it.

Below the doors (webhook, controller, cli), above the pure core: an adapter imports no door.
"""
