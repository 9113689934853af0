"""Who may do what, and how a client proves who it is: the ACLs and StandardAuthorizer decisions
(``authorizer``), the SASL mechanisms (PLAIN, SCRAM, OAUTHBEARER: ``sasl_mechanisms``), the TLS
listeners' contexts (``tls_config``) and the certificates ``mockbroker certs`` writes (``certs``).

Imports: ``protocol/`` only. The network side of security (the TLS handshake, the SASL
authenticator) is in ``network/``; delegation tokens, a controller record, in ``controller/``.
Mirrors Kafka's ``org.apache.kafka.common.security`` and ``org.apache.kafka.metadata.authorizer``.
"""
