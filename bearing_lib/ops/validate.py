"""Check exported files with the tools that will consume them (or their published schemas).

=========================  ==================================================================
format                     validator
=========================  ==================================================================
Prometheus rules           ``promtool check rules`` (Debian package ``prometheus``)
Kubernetes HPA             ``kubernetes-validate`` (the Kubernetes OpenAPI schemas, strict:
                           unknown fields fail), against its newest bundled Kubernetes version
KEDA ScaledObject          ``check-jsonschema`` with KEDA's CRD schema vendored in
                           ``bearing_lib/ops/schemas/`` (strict: unknown fields fail)
Envoy local rate limit     the Envoy API's own protobuf types (``xds-protos``): the YAML is parsed
                           into ``HttpFilter`` with ``LocalRateLimit`` as its typed config;
                           unknown fields, wrong types and bad durations fail. This is Envoy's
                           schema, not the Envoy binary (``envoy --mode validate`` is not
                           installable from the package registries used here)
nginx limit_req            ``nginx -t`` on a minimal nginx.conf that includes both snippets
                           (Debian package ``nginx-light``)
=========================  ==================================================================

Each check returns a :class:`Check`; a tool that is not installed gives ``ok=None`` with the
reason, never a pass.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import yaml

SCHEMA_DIR = Path(__file__).parent / "schemas"
KEDA_SCHEMA = SCHEMA_DIR / "keda-scaledobject-v1alpha1.strict.json"


@dataclass(frozen=True)
class Check:
    """One validation: which file, which validator, passed (True/False) or not run (None), and output."""

    path: str
    validator: str
    ok: bool | None
    output: str


def _run(cmd: list[str]) -> tuple[int, str]:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    return proc.returncode, (proc.stdout + proc.stderr).strip()


def promtool(path: str | Path) -> Check:
    exe = shutil.which("promtool")
    if exe is None:
        return Check(str(path), "promtool check rules", None, "promtool is not installed (Debian package prometheus)")
    rc, out = _run([exe, "check", "rules", str(path)])
    return Check(str(path), "promtool check rules", rc == 0, out)


def kubernetes(path: str | Path, *, version: str | None = None) -> Check:
    try:
        import kubernetes_validate
    except ImportError:
        return Check(str(path), "kubernetes-validate", None, "kubernetes-validate is not installed")
    version = version or kubernetes_validate.latest_version()
    name = f"kubernetes-validate (Kubernetes {version}, strict)"
    try:
        doc = yaml.safe_load(Path(path).read_text())
        kubernetes_validate.validate(doc, version, strict=True)
    except kubernetes_validate.ValidationError as exc:
        return Check(str(path), name, False, f"{'.'.join(str(p) for p in exc.path)}: {exc.message}")
    except (kubernetes_validate.SchemaNotFoundError, kubernetes_validate.InvalidSchemaError) as exc:
        return Check(str(path), name, False, str(exc))
    return Check(str(path), name, True, "valid")


def keda(path: str | Path) -> Check:
    name = f"check-jsonschema --schemafile {KEDA_SCHEMA.name}"
    try:
        import check_jsonschema  # noqa: F401
    except ImportError:
        return Check(str(path), name, None, "check-jsonschema is not installed")
    rc, out = _run([sys.executable, "-m", "check_jsonschema", "--schemafile", str(KEDA_SCHEMA), str(path)])
    return Check(str(path), name, rc == 0, out)


def envoy(path: str | Path) -> Check:
    name = "Envoy API protos (xds-protos): HttpFilter + LocalRateLimit"
    try:
        from envoy.extensions.filters.http.local_ratelimit.v3 import local_rate_limit_pb2  # noqa: F401
        from envoy.extensions.filters.network.http_connection_manager.v3 import http_connection_manager_pb2 as hcm
        from google.protobuf import json_format
    except ImportError:
        return Check(str(path), name, None, "xds-protos is not installed")
    doc = yaml.safe_load(Path(path).read_text())
    try:
        msg = json_format.ParseDict(doc, hcm.HttpFilter())
    except json_format.ParseError as exc:
        return Check(str(path), name, False, str(exc))
    inner = local_rate_limit_pb2.LocalRateLimit()
    if not msg.typed_config.Unpack(inner):
        return Check(str(path), name, False, f"typed_config is {msg.typed_config.type_url}, not LocalRateLimit")
    problems = []
    if not inner.stat_prefix:
        problems.append("stat_prefix is required")
    tb = inner.token_bucket
    if tb.max_tokens < 1:
        problems.append("token_bucket.max_tokens must be >= 1")
    if tb.fill_interval.ToMilliseconds() < 50:
        problems.append("token_bucket.fill_interval must be >= 50 ms")
    if problems:
        return Check(str(path), name, False, "; ".join(problems))
    return Check(str(path), name, True, "valid")


def nginx(http_conf: str | Path, location_conf: str | Path) -> Check:
    exe = shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx",) if Path(p).exists()), None)
    name = "nginx -t (minimal nginx.conf including both snippets)"
    if exe is None:
        return Check(str(http_conf), name, None, "nginx is not installed (Debian package nginx-light)")
    with tempfile.TemporaryDirectory(prefix="bearing-nginx-") as tmp:
        t = Path(tmp)
        conf = t / "nginx.conf"
        conf.write_text(
            f"pid {t / 'nginx.pid'};\nerror_log {t / 'error.log'};\nevents {{}}\nhttp {{\n"
            f"  access_log off;\n  client_body_temp_path {t};\n  proxy_temp_path {t};\n"
            f"  fastcgi_temp_path {t};\n  uwsgi_temp_path {t};\n  scgi_temp_path {t};\n"
            f"  include {Path(http_conf).resolve()};\n"
            f"  server {{\n    listen 127.0.0.1:18080;\n    location / {{\n"
            f"      include {Path(location_conf).resolve()};\n      proxy_pass http://127.0.0.1:8000;\n"
            f"    }}\n  }}\n}}\n"
        )
        rc, out = _run([exe, "-t", "-q", "-p", str(t), "-e", str(t / "error.log"), "-c", str(conf)])
    return Check(str(http_conf), name, rc == 0, out or "syntax is ok, test is successful")


def check_written(files: dict[str, list[str]]) -> list[Check]:
    """Run the validator of every format in ``files`` (as :func:`bearing_lib.ops.exports.export` returns)."""
    out: list[Check] = []
    for fmt, paths in files.items():
        if fmt == "prometheus":
            out.append(promtool(paths[0]))
        elif fmt == "hpa":
            out.append(kubernetes(paths[0]))
        elif fmt == "keda":
            out.append(keda(paths[0]))
        elif fmt == "envoy":
            out.append(envoy(paths[0]))
        elif fmt == "nginx":
            out.append(nginx(paths[0], paths[1]))
    return out
