"""Static checks of the Docker Compose deployment, run by scripts/test.d/60-deploy.sh (no container
engine needed). Owns: checking that compose.yaml's files and Dockerfile targets exist, that no
secret is written into compose.yaml, that the Dockerfile builds with the commands CI runs (and that its
dependency layer holds every workspace member), and
that every `occ` command the hook runs or the docs tell an admin to run exists with those
arguments in the versions we install. Must never: start a container or reach the network.

The occ signatures below are copied from the commands' sources (read with the project's source
search), so a renamed option or a wrong type fails here instead of on an admin's server.

Usage: check_deploy.py RENDERED_CONFIG.yaml [OCC_LOG]
  RENDERED_CONFIG.yaml  the output of `docker-compose config`
  OCC_LOG               the occ calls the hook made under deploy/ci/test-hook.sh (JSON arrays)
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
HOOK = ROOT / "deploy/nextcloud/tamebi-hook.sh"
DOCS = [ROOT / "docs/admin-guide.md", ROOT / "docs/nextcloud-app.md", ROOT / "README.md"]


@dataclass
class Occ:
    """An occ command's surface: positional arguments and options (Symfony Console semantics)."""
    args: list[tuple[str, bool, bool]]  # (name, required, is_array)
    flags: set[str] = field(default_factory=set)  # InputOption::VALUE_NONE (and NEGATABLE: --x/--no-x)
    values: set[str] = field(default_factory=set)  # InputOption::VALUE_REQUIRED / VALUE_OPTIONAL
    short: dict[str, str] = field(default_factory=dict)
    choices: dict[str, set[str]] = field(default_factory=dict)


SIGNATURES: dict[str, Occ] = {
    # nextcloud/server (stable31) core/Command/App/Enable.php
    "app:enable": Occ(args=[("app-id", True, True)], flags={"force"}, values={"groups"}, short={"g": "groups", "f": "force"}),
    # nextcloud/server (stable31) core/Command/App/Install.php
    "app:install": Occ(args=[("app-id", True, False)], flags={"keep-disabled", "force", "allow-unstable"}, short={"f": "force"}),
    # nextcloud/server (stable31) core/Command/App/Update.php
    "app:update": Occ(args=[("app-id", False, False)], flags={"all", "showonly", "allow-unstable"}),
    # nextcloud/server (stable31) core/Command/Config/System/SetConfig.php (castValue's types)
    "config:system:set": Occ(args=[("name", True, True)], flags={"update-only"}, values={"type", "value"},
                             choices={"type": {"string", "integer", "int", "double", "float", "boolean", "bool", "json", "null"}}),
    # nextcloud/server (stable31) core/Command/Config/System/GetConfig.php (+ core/Command/Base.php --output)
    "config:system:get": Occ(args=[("name", True, True)], values={"default-value", "output"}),
    # nextcloud/server (stable31) core/Command/Config/App/SetConfig.php
    "config:app:set": Occ(args=[("app", True, False), ("name", True, False)],
                          flags={"lazy", "no-lazy", "sensitive", "no-sensitive", "update-only"}, values={"value", "type"},
                          choices={"type": {"string", "integer", "float", "boolean", "array"}}),
    # nextcloud/server (stable31) core/Command/Config/App/GetConfig.php (+ core/Command/Base.php --output)
    "config:app:get": Occ(args=[("app", True, False), ("name", True, False)], flags={"details"}, values={"default-value", "output"}),
    # nextcloud/server (stable31) core/Command/Upgrade.php (no arguments; exit 0 when up to date)
    "upgrade": Occ(args=[]),
    # nextcloud/server (stable31) core/Command/Maintenance/Mode.php
    "maintenance:mode": Occ(args=[], flags={"on", "off"}),
    # H2CK/oidc lib/Command/Clients/OIDCCreate.php (1.x: the options tamebi:setup passes)
    "oidc:create": Occ(args=[("name", True, False), ("redirect_uris", True, True)],
                       values={"algorithm", "flow", "type", "token_type", "allowed_scopes", "email_regex",
                               "client_id", "client_secret", "resource_url"},
                       short={"a": "algorithm", "f": "flow", "t": "type"},
                       choices={"type": {"public", "confidential"}, "flow": {"code", "code id_token"},
                                "token_type": {"opaque", "jwt"}, "algorithm": {"RS256", "HS256"}}),
    # H2CK/oidc lib/Command/Clients/OIDCList.php
    "oidc:list": Occ(args=[]),
}

# The hook must bring exactly these apps (and ours) up.
HOOK_APPS = ["oidc", "user_oidc", "deck", "mail", "tamebi"]
# The hook's shell variables that stand for words of an occ command: what each becomes at most.
HOOK_WORDS = {"$app": "oidc", "$rotate": "--rotate-secrets"}


def our_commands() -> None:
    """tamebi:setup / tamebi:verify, read from our own configure() methods."""
    for php in (ROOT / "nextcloud-app/lib/Command").glob("*.php"):
        text = php.read_text()
        name = re.search(r"setName\('([^']+)'\)", text)
        if not name:
            continue
        occ = Occ(args=[])
        for opt, mode in re.findall(r"addOption\('([^']+)',\s*[^,]+,\s*InputOption::(VALUE_\w+)", text):
            (occ.flags if mode == "VALUE_NONE" else occ.values).add(opt)
        for arg, mode in re.findall(r"addArgument\('([^']+)',\s*InputArgument::(\w+)", text):
            occ.args.append((arg, mode == "REQUIRED", False))
        SIGNATURES[name.group(1)] = occ


def check_occ(words: list[str], where: str) -> list[str]:
    """Errors for one occ invocation (words after `occ`), Symfony Console style parsing."""
    cmd, rest = words[0], words[1:]
    sig = SIGNATURES.get(cmd)
    if sig is None:
        return [f"{where}: occ {cmd}: no such command in the versions we install (or not in the check's table)"]
    errors, positional, options = [], [], {}
    i = 0
    while i < len(rest):
        w = rest[i]
        if w.startswith("--"):
            name, eq, value = w[2:].partition("=")
            if name in sig.flags and not eq:
                options[name] = True
            elif name in sig.values:
                if not eq:
                    i += 1
                    if i >= len(rest):
                        errors.append(f"{where}: occ {cmd}: --{name} needs a value")
                        break
                    value = rest[i]
                options[name] = value
            else:
                errors.append(f"{where}: occ {cmd}: unknown option --{name}")
        elif w.startswith("-") and len(w) > 1 and not w.startswith("-$"):
            name = sig.short.get(w[1:2])
            if name is None:
                errors.append(f"{where}: occ {cmd}: unknown option {w}")
            elif name in sig.values:
                value = w[2:] or (rest[i + 1] if i + 1 < len(rest) else "")
                i += 0 if w[2:] else 1
                options[name] = value
            else:
                options[name] = True
        else:
            positional.append(w)
        i += 1
    for opt, allowed in sig.choices.items():
        v = options.get(opt)
        if isinstance(v, str) and not v.startswith("$") and v not in allowed:
            errors.append(f"{where}: occ {cmd}: --{opt}={v} is not one of {sorted(allowed)}")
    if "oidc_provider_bearer_validation" in positional and not cmd.startswith("config:system:"):
        errors.append(f"{where}: occ {cmd}: user_oidc reads oidc_provider_bearer_validation from the system config only")
    if cmd == "config:system:set" and "oidc_provider_bearer_validation" in positional and options.get("type") not in ("boolean", "bool"):
        errors.append(f"{where}: occ {cmd}: user_oidc compares oidc_provider_bearer_validation with === true: use --type=boolean")
    if cmd == "config:system:set" and options.get("type") in ("boolean", "bool"):
        if str(options.get("value", "")).lower() not in ("true", "false"):
            errors.append(f"{where}: occ {cmd}: a boolean needs --value=true or --value=false")
    takes_array = any(a[2] for a in sig.args)
    required = sum(1 for a in sig.args if a[1])
    if len(positional) < required:
        errors.append(f"{where}: occ {cmd}: needs {required} argument(s), got {positional}")
    if not takes_array and len(positional) > len(sig.args):
        errors.append(f"{where}: occ {cmd}: too many arguments {positional}")
    return errors


def occ_invocations(text: str, words_for: dict[str, str] | None = None) -> list[tuple[int, list[str]]]:
    """Every `occ ...` / `$OCC ...` command in shell or markdown text, continuation lines joined;
    shell comments and markdown headings (signatures with [optional] parts) are not commands."""
    found = []
    lines = text.replace("\\\n", " ").splitlines()
    for n, line in enumerate(lines, 1):
        if line.lstrip().startswith("#"):
            continue
        m = re.search(r"(?:^|[\s`(])(?:\$OCC|(?:php\s+)?(?:/var/www/html/)?occ)\s+((?:[a-z_]+:[a-z:_-]+|upgrade)(?:\s.*)?)$", line)
        if not m:
            continue
        try:
            words = shlex.split(m.group(1).split("`")[0], comments=True)
        except ValueError:
            words = m.group(1).split()
        cut = next((i for i, w in enumerate(words) if w in ("|", "||", "&&", ";", ">", "2>&1")), len(words))
        found.append((n, [(words_for or {}).get(w, w) for w in words[:cut]]))
    return found


# `docker compose` options that take a value (so the next word is not a service).
COMPOSE_VALUE_OPTIONS = {"-u", "--user", "--entrypoint", "-e", "--env", "-w", "--workdir", "-v", "--volume", "-p", "--publish"}


def check_compose_services(line: str, services: set[str], where: str) -> list[str]:
    """The services a `docker compose exec|run|logs|stop|start|restart ...` line names must exist."""
    m = re.search(r"docker compose (exec|run|logs|stop|start|restart)\b(.*)", line)
    if not m:
        return []
    try:
        words = shlex.split(m.group(2).split("`")[0])
    except ValueError:
        words = m.group(2).split()
    named, skip = [], False
    for w in words:
        if w in ("|", ">", "&&", ";"):
            break
        if skip:
            skip = False
        elif w.startswith("-"):
            skip = w in COMPOSE_VALUE_OPTIONS
        else:
            named.append(w)
            if m.group(1) in ("exec", "run"):
                break  # the rest is the command run in it
    return [f"{where}: no service {s!r} in compose.yaml" for s in named if s not in services]


def check_dependency_layer(dockerfile: str) -> list[str]:
    """The builder's dependency layer: every workspace member's manifest is copied in and stubbed
    by deploy/docker/stub-workspace, and the stubbed tree loads as a workspace (a member missing
    from the layer fails `cargo build` there before anything compiles)."""
    errors: list[str] = []
    members = tomllib.loads((ROOT / "Cargo.toml").read_text())["workspace"]["members"]
    copied = re.findall(r"^COPY\s+(\S+)/Cargo\.toml\s", dockerfile, re.M)
    run = re.search(r"^RUN\s+stub-workspace\s+(.*?)\s*&&", dockerfile.replace("\\\n", " "), re.M)
    if not run:
        return ["Dockerfile: the builder stage does not run stub-workspace"]
    stubbed = run.group(1).split()
    for member in members:
        if member != "." and member not in copied:
            errors.append(f"Dockerfile: workspace member {member} has no `COPY {member}/Cargo.toml` in the dependency layer")
        if member not in stubbed:
            errors.append(f"Dockerfile: workspace member {member} is not stubbed by stub-workspace")
    if errors or not shutil.which("cargo"):
        return errors
    with tempfile.TemporaryDirectory(prefix="tamebi-deps-layer-") as tmp:
        for manifest in ["Cargo.toml", "Cargo.lock"] + [f"{d}/Cargo.toml" for d in copied]:
            (Path(tmp) / manifest).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(ROOT / manifest, Path(tmp) / manifest)
        for cmd in ([str(ROOT / "deploy/docker/stub-workspace"), *stubbed],
                    ["cargo", "metadata", "--offline", "--no-deps", "--format-version", "1"]):
            done = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True)
            if done.returncode != 0:
                errors.append(f"Dockerfile dependency layer: `{' '.join(cmd[:2])}` fails: {done.stderr.strip()[-400:]}")
                break
    return errors


def main(rendered: str, occ_log: str | None = None) -> int:
    our_commands()
    errors: list[str] = []
    config = yaml.safe_load(Path(rendered).read_text())
    services = config.get("services", {})
    dockerfile = (ROOT / "Dockerfile").read_text()
    targets = set(re.findall(r"^FROM\s+\S+\s+AS\s+(\S+)", dockerfile, re.M | re.I))

    # compose.yaml: the files it names exist, its build targets exist, no literal secret.
    for name, svc in services.items():
        build = svc.get("build")
        if build:
            if not (ROOT / "Dockerfile").is_file():
                errors.append(f"service {name}: no Dockerfile")
            if build.get("target") not in targets:
                errors.append(f"service {name}: Dockerfile has no target {build.get('target')!r} (has {sorted(targets)})")
        for vol in svc.get("volumes", []):
            if isinstance(vol, dict) and vol.get("type") == "bind":
                src = Path(vol["source"])
                if not src.exists():
                    errors.append(f"service {name}: bind mount {src} does not exist")
                elif "docker-entrypoint-hooks.d" in vol.get("target", "") and not src.stat().st_mode & 0o111:
                    errors.append(f"service {name}: hook {src} is not executable (the image skips it)")
    raw = (ROOT / "compose.yaml").read_text()
    for n, line in enumerate(raw.splitlines(), 1):
        m = re.match(r"\s*-?\s*\"?(\w*(PASSWORD|SECRET|API_KEY)\w*)\"?\s*[:=]\s*(.*)", line)
        if m and m.group(1) != "TAMEBI_SECRETS_FILE" and m.group(3).strip() and not m.group(3).strip().startswith("${"):
            errors.append(f"compose.yaml:{n}: {m.group(1)} has a literal value; take it from .env")
    example = (ROOT / ".env.example").read_text()
    for var in sorted(set(re.findall(r"\$\{(\w+)", raw))):
        if not re.search(rf"^{var}=", example, re.M):
            errors.append(f".env.example does not mention {var}, which compose.yaml uses")

    # Dockerfile: COPY sources exist; build commands are the ones CI runs.
    for src in re.findall(r"^COPY\s+(?!--from)(\S+)\s", dockerfile, re.M):
        if src != "." and not (ROOT / src).exists():
            errors.append(f"Dockerfile: COPY source {src} does not exist")
    errors += check_dependency_layer(dockerfile)
    harness = (ROOT / "dev/test-harness/src/process.rs").read_text()
    args = re.search(r"BUILD_ARGS: \[&str; \d+\] = \[([^\]]+)\]", harness)
    ci_cargo = "cargo " + " ".join(re.findall(r'"([^"]+)"', args.group(1))) if args else ""
    ci_scripts = "\n".join(p.read_text() for p in sorted((ROOT / "scripts").glob("*.d/*.sh")))
    for run in re.findall(r"^RUN\s+(.*?)(?<!\\)$", dockerfile.replace("\\\n", " "), re.M):
        for part in re.split(r"&&|;", run):
            cmd = " ".join(part.split())
            if cmd.startswith("cargo "):
                if not ci_cargo.startswith(cmd):
                    errors.append(f"Dockerfile runs `{cmd}`, CI builds with `{ci_cargo}`")
            elif cmd.startswith("npm ") and cmd not in ci_scripts:
                errors.append(f"Dockerfile runs `{cmd}`, which no scripts/*.d step runs")

    # The hook and the docs: every occ command exists with those arguments.
    hook = HOOK.read_text()
    if not re.search(r"for app in " + " ".join(HOOK_APPS) + r"; do", hook):
        errors.append(f"hook: does not enable exactly {HOOK_APPS}")
    calls = occ_invocations(hook, HOOK_WORDS)
    for needed in ("app:enable", "config:system:set", "tamebi:setup"):
        if not any(words and words[0] == needed for _, words in calls):
            errors.append(f"hook: never runs occ {needed}")
    for n, words in calls:
        errors += check_occ(words, f"{HOOK.relative_to(ROOT)}:{n}")
    if occ_log:
        import json
        ran = [json.loads(line) for line in Path(occ_log).read_text().splitlines() if line.strip()]
        for n, words in enumerate(ran, 1):
            errors += check_occ(words, f"hook run, occ call {n}")
        enabled = {w[1] for w in ran if w[:1] == ["app:enable"] and len(w) > 1}
        if enabled != set(HOOK_APPS):
            errors.append(f"hook run: enabled {sorted(enabled)}, expected {HOOK_APPS}")
    create = (ROOT / "nextcloud-app/lib/Service/OidcClients.php").read_text()
    body = create[create.index("'command' => 'oidc:create'"):]
    body = body[:body.index("]);")]
    words = ["oidc:create", "Tamebi", "https://nc.example/apps/tamebi/oauth/callback"]
    for opt, value in re.findall(r"'(--[a-z_]+)' => '([^']*)'", body):
        words.append(f"{opt}={value}")
    errors += check_occ(words, "nextcloud-app/lib/Service/OidcClients.php (oidc:create)")
    for doc in DOCS:
        if doc.exists():
            for n, words in occ_invocations(doc.read_text()):
                errors += check_occ(words, f"{doc.relative_to(ROOT)}:{n}")
    guide = ROOT / "docs/admin-guide.md"
    if guide.exists():
        for n, line in enumerate(guide.read_text().splitlines(), 1):
            errors += check_compose_services(line, set(services), f"docs/admin-guide.md:{n}")

    for e in errors:
        print("FAIL", e)
    print(f"deploy checks: {len(errors)} problem(s); {len(SIGNATURES)} occ signatures, {len(services)} services")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None))
