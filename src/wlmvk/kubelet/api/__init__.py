"""The kubelet HTTPS API: the server, who may use it (access rules and the gate), container logs;
exec and stats in their own folders."""
