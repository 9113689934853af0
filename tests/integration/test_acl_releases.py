"""confluent-kafka's (librdkafka's) Admin creates, describes and deletes an ACL on a mockbroker of an older
``mock.kafka.version`` with StandardAuthorizer, as on a real broker of that release: librdkafka checks
ApiVersions first and refuses an API the broker does not list ("not supported by broker"), which it did
on 4.1 while mockbroker's 4.1 table lacked the ACL APIs (29-31) that a real Kafka 4.1.2 advertises."""

from __future__ import annotations

import pytest

from mockbroker import MockBroker

ck = pytest.importorskip("confluent_kafka")
from confluent_kafka.admin import (  # noqa: E402
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


@pytest.mark.parametrize("release", ["4.1", "4.0", "3.7"])
def test_admin_creates_an_acl(release):
    config = {"mock.kafka.version": release, "authorizer.class.name": AUTHORIZER, "super.users": "User:ANONYMOUS"}
    binding = AclBinding(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, "User:bob", "*",
                         AclOperation.READ, AclPermissionType.ALLOW)
    every = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                             AclPermissionType.ANY)
    with MockBroker(config=config) as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap_servers})
        for future in admin.create_acls([binding], request_timeout=20).values():
            assert future.result(timeout=30) is None
        assert admin.describe_acls(every, request_timeout=20).result(timeout=30) == [binding]
        deleted = admin.delete_acls([every], request_timeout=20)
        assert [f.result(timeout=30) for f in deleted.values()] == [[binding]]
        assert admin.describe_acls(every, request_timeout=20).result(timeout=30) == []
