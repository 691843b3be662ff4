"""Resource usage for ``kubectl top``: the Summary API, the resource metrics, the usage samples,
the CPU ledger and the source that samples them."""
