"""The node agent's stand-ins for mount namespaces and cluster DNS.

A container here is a plain process on this machine: it sees the host's file system and the
host's network. So the container paths of its volume mounts are rewritten to the host folders
that back them, and cluster DNS names to ``127.0.0.1``, in every string the pod spec hands the
process (command, args, env values, workingDir). A path is rewritten where it appears as a
whole path or a path prefix: the entire string (``/data``, ``/data/x``), or inside it after a
separator (``--out=/data/x``, ``sh -c 'cat /data/x'``, ``PYTHONPATH=/a:/data``). Paths in files
a process reads, or paths it builds at run time from pieces, are not rewritten: give them
through env or args.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

LOOPBACK = "127.0.0.1"

# A path starts at the beginning or after a separator (not inside a word, URL or longer path)
# and ends at the end, a slash, or a separator.
_PATH_BEFORE = r"(?<![\w.~/\-$])"
_PATH_AFTER = r"(?=$|[/\s\"'`;:,)=\]}|&>])"
# A host name ends where no further label follows.
_NAME_BEFORE = r"(?<![\w.\-])"
_NAME_AFTER = r"(?![\w\-]|\.[\w])"
_LABEL = r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?"


class Rewriter:
    """Rewrites container paths and cluster host names in the strings of one container."""

    def __init__(
        self,
        mounts: Iterable[tuple[str, str]],
        namespace: str,
        subdomains: Iterable[str] = (),
        services: Iterable[str] = (),
    ) -> None:
        table = {}
        for container_path, host_path in mounts:
            normalized = container_path.rstrip("/")
            if normalized:  # a mount at "/" cannot be told apart from any other path
                table[normalized] = host_path
        self._mounts = table
        alternatives = "|".join(re.escape(p) for p in sorted(table, key=len, reverse=True))
        self._paths = (
            re.compile(f"{_PATH_BEFORE}(?:{alternatives}){_PATH_AFTER}") if table else None
        )
        names = [rf"(?:{_LABEL}\.)+svc\.cluster\.local"]
        namespace_suffix = rf"(?:\.{re.escape(namespace)}(?:\.svc)?)?"
        domains = sorted({*subdomains, *services} - {""}, key=len, reverse=True)
        if domains:
            joined = "|".join(re.escape(d) for d in domains)
            names.append(rf"{_LABEL}\.(?:{joined}){namespace_suffix}")
        known_services = sorted(set(services) - {""}, key=len, reverse=True)
        if known_services:
            joined = "|".join(re.escape(s) for s in known_services)
            names.append(rf"(?:{joined})\.{re.escape(namespace)}(?:\.svc)?")
        self._names = re.compile(f"{_NAME_BEFORE}(?:{'|'.join(names)}){_NAME_AFTER}")

    def path(self, text: str) -> str:
        if self._paths is None:
            return text

        def replace(match: re.Match[str]) -> str:
            return self._mounts[match.group(0)]

        return self._paths.sub(replace, text)

    def host(self, text: str) -> str:
        return self._names.sub(LOOPBACK, text)

    def __call__(self, text: str) -> str:
        return self.host(self.path(text))


_REFERENCE = re.compile(r"\$\$|\$\(([-._a-zA-Z][-._a-zA-Z0-9]*)\)")


def expand(text: str, variables: dict[str, str]) -> str:
    """Kubernetes' ``$(VAR)`` expansion in command, args and env values: a reference to a
    defined variable is replaced, ``$$`` is an escaped ``$``, anything else stays as written."""

    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group(1)
        return variables.get(name, match.group(0))

    return _REFERENCE.sub(replace, text)
