"""The in-memory API server's client certificate for kubelets, as kube-apiserver has one.

kube-apiserver reaches a kubelet's API (``pods/log``) with the certificate of
``--kubelet-client-certificate``, which the kubelet trusts through its client
CA. ``issue`` makes the same pair for the in-memory server: a CA (give it to
the kubelet: ``wlmvk kubelet --client-ca``) and a certificate it signed for
``kube-apiserver-kubelet-client`` in ``system:masters`` (the log proxy
presents it), written to a directory.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

USER = "kube-apiserver-kubelet-client"
GROUP = "system:masters"


@dataclass(frozen=True)
class KubeletClientCredentials:
    ca: Path
    cert: Path
    key: Path


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    path.chmod(0o600)


def issue(directory: Path) -> KubeletClientCredentials:
    """Write kubelet-client-ca.crt, kubelet-client.crt and kubelet-client.key to ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "wlmvk-dev-kubelet-client-ca")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=365))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name(
        [x509.NameAttribute(NameOID.ORGANIZATION_NAME, GROUP), x509.NameAttribute(NameOID.COMMON_NAME, USER)]
    )
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=365))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    made = KubeletClientCredentials(
        ca=directory / "kubelet-client-ca.crt",
        cert=directory / "kubelet-client.crt",
        key=directory / "kubelet-client.key",
    )
    made.ca.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    made.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    _write_key(made.key, key)
    return made
