"""TLS for a kubelet API (the virtual kubelet, the host node): a given certificate, or a self-signed one."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
import tempfile
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def self_signed(directory: Path, *, names: list[str], addresses: list[str]) -> tuple[Path, Path]:
    """Write a fresh self-signed certificate and key for ``names``/``addresses``; return their paths."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0] if names else "wlmvk-kubelet")])
    alt: list[x509.GeneralName] = [x509.DNSName(name) for name in names]
    for address in addresses:
        try:
            alt.append(x509.IPAddress(ipaddress.ip_address(address)))
        except ValueError:
            alt.append(x509.DNSName(address))
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=365))
        .add_extension(x509.SubjectAlternativeName(alt), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "kubelet.crt", directory / "kubelet.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    key_path.chmod(0o600)
    return cert_path, key_path


def server_context(
    *, cert: str, key: str, client_ca: str, names: list[str], addresses: list[str]
) -> ssl.SSLContext:
    """The server's SSL context; with ``client_ca`` it asks clients for a certificate.

    As the real kubelet does, the certificate is requested, not demanded, at the
    handshake: a client that presents none gets in far enough to be answered 401
    by the API (``kubelet.auth.Gate``). A
    certificate that the CA did not sign fails the handshake itself: Python's ssl
    cannot request a certificate without verifying it (Go's RequestClientCert).
    """
    if not cert:
        directory = Path(tempfile.mkdtemp(prefix="wlmvk-kubelet-tls-"))
        cert_path, key_path = self_signed(directory, names=names, addresses=addresses)
        cert, key = str(cert_path), str(key_path)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key or None)
    if client_ca:
        context.load_verify_locations(client_ca)
        context.verify_mode = ssl.CERT_OPTIONAL
    return context
