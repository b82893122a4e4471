"""The relay: a store-and-forward server for sealed envelopes (docs/ARCHITECTURE.md "Relays").

`relay.store` keeps spaces and envelopes in SQLite, `relay.peer` is one member's connection as
a pure state machine, `relay.server` the aiohttp process with its limits. It imports core (the
envelope and token checks), sync's wire pieces (sync.relay_wire, sync.negentropy), aiohttp and
noise, and never storage: it holds no replica and no workspace secret.
"""
