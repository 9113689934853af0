"""Names vulture (dead-code finder) would report that are used from outside its view.

``tests/unit/project/test_dead_code.py`` runs vulture over protocol/, mockbroker/, tests/, bench/ and
scripts/ with this file; anything else it reports is dead code.  Every entry says who uses it.
This file is read by vulture, never executed.
"""
# ruff: noqa
# type: ignore

# asyncio.BufferedProtocol callbacks: called by the event loop
_.connection_made, _.get_buffer, _.buffer_updated, _.eof_received, _.connection_lost
_.pause_writing, _.resume_writing
sizehint, exc  # parameters their signatures require (and __exit__'s *exc)

# kafka-python's ConsumerRebalanceListener callbacks: called by the client
_.on_partitions_revoked, _.on_partitions_assigned

# read through dataclasses.asdict (ThrottleEvent.as_dict, MockBroker.throttle_events) and by tests
client_should_throttle, next_request_ms, early_ms, held_while_muted
_.next_request_ms, _.early_ms, _.held_while_muted

# RequestRecord fields: written out through dataclasses.fields (as_dict: the admin API, the on-disk
# journal), read by tests and the report
request_bytes, arrived_clock_ns, received_wall_ns, handled_wall_ns, sent_wall_ns, response_bytes
mute_start_clock_ns, mute_end_clock_ns, completed_by, quota_entity
_.mute_start_clock_ns, _.mute_end_clock_ns, _.completed_by, _.quota_entity
total_ms, _.total_ms  # LatencyHistogram: the _sum of /metrics' histogram
admin_url  # MockBroker.admin_url: for tests and users steering over HTTP

# the client software a connection announced (ApiVersions v3+): set by the handler, part of
# the connection's view (request.ClientChannel) for the control plane and logs
client_software, _.client_software

# wire constants named for the reader next to the ones in use (ListOffsets special timestamps,
# DescribeConfigs config types, DescribeCluster endpoint types, record batch codecs)
EARLIEST_PENDING_UPLOAD, LATEST_TIERED, INT, SHORT, CONTROLLERS, LZ4, SNAPPY

_.exc_text, _.levelname  # logging.LogRecord fields the log formatter reads (admin/http.py's one-line filter)
_.log_errors  # re2.Options.log_errors: read by RE2
old_node_id  # a coordinator-move listener's parameter (GroupRegistry calls listeners with both ids)
_Noop  # used by timing_wheel.py's doctest

aiokafka  # tests/integration/test_aiokafka.py: importorskip of the client under test
pytest_plugins  # pytest reads it
no_ci  # a pytest fixture, requested by name

# PySpark's SparkContext class attributes, reset by tests/integration/sparktools.py so that the next
# SparkContext launches a JVM with Spark's Kafka connector on its classpath
_._jvm
_.binary_location  # selenium ChromeOptions.binary_location: the browser tests/integration/test_report_html.py drives
# mockbroker/__init__.py: PEP 562 module attribute hooks, called by the import system and dir()
_.__getattr__
_.__dir__

# mockbroker/pytest_plugin.py: hooks pytest calls by name, fixtures tests request by name, and the
# helpers of the brokers they yield (used by generated test files in tests/unit/handle/test_pytest_plugin.py
# and docs/pytest.md, which vulture does not read)
pytest_addoption, pytest_configure, pytest_runtest_protocol, pytest_runtest_makereport, pytest_collection_modifyitems
mockbroker, mockbroker_manual, mockbroker_session, mockbroker_tls
_.wait_for_throttle_events, _.journal_of_test
# mockbroker/server/replica_manager.py: the log side of WriteTxnMarkers, called by the transaction coordinator
# (mockbroker/txn/, written separately) and by tests/unit/server/test_txn_log.py, which vulture does not read
_.append_txn_marker
# tests/unit/admin/schemathesis_hooks.py: a hook schemathesis calls by name (SCHEMATHESIS_HOOKS)
flatmap_body
# protocol/errors.py: the attributes enum reads on the members it adds to kio's ErrorCode
_.__objclass__, _._sort_order_

# Kafka's enums mirrored whole: MemberState.UNKNOWN (a member read back from an unknown record state;
# CurrentAssignmentBuilder fences it), Status.MISSING_CLIENT_TAGS (v1; rack-aware standbys not simulated)
UNKNOWN, MISSING_CLIENT_TAGS
# StreamsGroupDescribeResponse's TopologyDescriptionStatus mirrored whole (mockbroker/group/streams_description.py):
# NOT_REQUESTED is the wire default when the client did not ask; ERROR needs a failing plugin, which is not simulated
DESCRIPTION_NOT_REQUESTED, DESCRIPTION_ERROR
# Kafka's ACL enums mirrored whole (mockbroker/security/authorizer.py): members a request names by number,
# decoded through the enum, that no check of mockbroker names itself
DELEGATION_TOKEN, CLUSTER_ACTION, CREATE_TOKENS, DESCRIBE_TOKENS, TWO_PHASE_COMMIT
# a test module's marks, read by pytest (tests/differential/test_differential.py)
pytestmark
