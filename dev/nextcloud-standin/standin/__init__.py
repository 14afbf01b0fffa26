"""A Nextcloud stand-in for tests: real DAV servers (WsgiDAV, Radicale) with Nextcloud's layout,
Maildirs behind the tamebi app's mail bridge, and a real SMTP sink (aiosmtpd).

Modules:
- ``config``     the typed command line (the only place that reads arguments)
- ``auth``       app passwords and self-issued JWT access tokens -> the calling uid
- ``store``      SQLite state Nextcloud keeps beside the files: file ids, shares, Deck
- ``namespace``  what a user's file tree looks like (own home + share mounts) and what they may do
- ``files``      the WsgiDAV provider that serves that tree with Nextcloud's properties
- ``search``     WebDAV SEARCH (RFC 5323 basicsearch) over a user's tree
- ``groupware``  Radicale behind /remote.php/dav/calendars and /addressbooks
- ``ocs``        OCS: current user, the files_sharing API, and the mail bridge's envelope
- ``mail``       the tamebi app's mail bridge over a Maildir per user (Nextcloud Mail's stand-in)
- ``mail_fixture`` alice's and bob's fixture mail
- ``smtp_sink``  the aiosmtpd SMTP server sends go to, delivering into a Maildir
- ``deck``       the Deck REST API subset
- ``webhooks``   webhook_listeners-shaped notifications after file changes
- ``app``        the front WSGI router: authentication first, then the part that answers
- ``__main__``   starts cheroot, prints the ready line, stops on SIGTERM

Nothing here decides access on the caller's behalf beyond what Nextcloud itself enforces:
it is a test double whose job is to answer like Nextcloud (or stricter).
"""
