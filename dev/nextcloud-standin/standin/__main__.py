"""Entry point: ``python -m standin --state DIR --bind HOST:PORT --user uid:pw ...``.

Owns: wiring the parts together, creating the state layout, serving with cheroot (a real
threaded WSGI server), printing exactly one ``ready http://HOST:PORT`` line on stdout once
the socket is listening, and stopping cleanly on SIGTERM/SIGINT. Logs go to stderr.
Must never: print anything else on stdout (the harness and scripts read that line).
"""

from __future__ import annotations

import logging
import json
import os
import secrets
import signal
import sys
import threading

from cheroot import wsgi

from .app import Parts, StandinApp
from .auth import Authenticator
from .config import Config, ConfigError, parse
from .deck import Deck
from .groupware import Groupware
from .mail import Mail, MailStore
from .namespace import Namespace
from .ocs import Ocs
from .sessions import Sessions
from .smtp_sink import SmtpSink
from .store import Store
from .talk import Talk
from .webhooks import Webhooks

log = logging.getLogger("standin")


def build(cfg: Config, sink: SmtpSink) -> tuple[StandinApp, Webhooks]:
    state = cfg.state_dir
    (state / "files").mkdir(parents=True, exist_ok=True)
    (state / "mail").mkdir(exist_ok=True)
    store = Store(state / "standin.db")
    ns = Namespace(state / "files", store)
    groupware = Groupware(state)
    mail_store = MailStore(state / "mail", store)
    for uid in cfg.users:
        mail_store.ensure_user(uid)
        ns.home(uid).mkdir(exist_ok=True)
        store.node_id(uid)
        groupware.ensure_defaults(uid)
    hooks = Webhooks(cfg.webhook_url, cfg.webhook_secret)
    parts = Parts(auth=Authenticator(cfg.users, cfg.oidc_provider_bearer_validation), ns=ns, groupware=groupware,
                  ocs=Ocs(ns, list(cfg.users), Mail(mail_store, cfg.mail, (sink.host, sink.port)), cfg.language, cfg.locale), deck=Deck(store),
                  hooks=hooks, sessions=Sessions(), sink=sink, talk=Talk(list(cfg.users)),
                  occ_token=secrets.token_hex(32),
                  login_delay=cfg.login_delay_ms / 1000, user_oidc=cfg.user_oidc)
    return StandinApp(parts), hooks


def main(argv: list[str]) -> int:
    logging.basicConfig(stream=sys.stderr, level=logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        cfg = parse(argv)
    except ConfigError as e:
        print(f"nextcloud-standin: {e}", file=sys.stderr)
        return 2
    try:
        cfg.state_dir.mkdir(parents=True, exist_ok=True)
        sink = SmtpSink(cfg.state_dir / "smtp-sink", cfg.smtp_host, cfg.smtp_port)
    except OSError as e:
        print(f"nextcloud-standin: cannot use state directory {cfg.state_dir}: {e}", file=sys.stderr)
        return 1
    try:
        sink.start()
    except (OSError, RuntimeError) as e:
        print(f"nextcloud-standin: cannot start the SMTP sink on {cfg.smtp_host}:{cfg.smtp_port}: {e}", file=sys.stderr)
        return 1
    try:
        app, hooks = build(cfg, sink)
    except OSError as e:
        sink.stop()
        print(f"nextcloud-standin: cannot use state directory {cfg.state_dir}: {e}", file=sys.stderr)
        return 1
    server = wsgi.Server((cfg.host, cfg.port), app, numthreads=cfg.threads, request_queue_size=128,
                         server_name="nextcloud-standin")
    try:
        server.prepare()
    except OSError as e:
        print(f"nextcloud-standin: cannot listen on {cfg.host}:{cfg.port}: {e}", file=sys.stderr)
        sink.stop()
        return 1
    host, port = server.bind_addr[:2]
    app.p.talk.backend = f"http://{host}:{port}/"
    # What dev/nextcloud-standin/occ reads: where this server is and the token it accepts.
    occ_file = cfg.state_dir / "occ.json"
    occ_file.write_text(json.dumps({"url": f"http://{host}:{port}", "token": app.p.occ_token}))
    os.chmod(occ_file, 0o600)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    serving = threading.Thread(target=server.serve, name="cheroot", daemon=True)
    serving.start()
    print(f"ready http://{host}:{port}", flush=True)
    log.info("serving %s for %s; JWT bearer tokens %s", cfg.state_dir, ", ".join(cfg.users),
             "accepted" if cfg.oidc_provider_bearer_validation else "refused (no --oidc-provider-bearer-validation)")
    log.info("user_oidc %s", "installed: route parameters win over JSON fields without a session" if cfg.user_oidc
             else "not installed (--without-user-oidc): JSON fields win over route parameters")
    log.info("mail bridge %s; SMTP sink on %s:%d", "on" if cfg.mail else "off (--without-mail: 501)", sink.host, sink.port)
    stop.wait()
    log.info("stopping")
    server.stop()
    hooks.stop()
    sink.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
