"""The Azure SDK for Python against localplane, as a user's script would call it.

Run by crates/localplane/tests/real_clients.rs with the environment `labctl local az` prints
(ARM_ENDPOINT, AZURE_SUBSCRIPTION_ID, IDENTITY_ENDPOINT/IDENTITY_HEADER, REQUESTS_CA_BUNDLE).
Uses azure-mgmt-appcontainers' long-running-operation pollers throughout. Progress goes to
stderr; the last stdout line is a JSON report the test reads back against localplane.
"""

import json
import os
import sys

from azure.identity import ManagedIdentityCredential
from azure.mgmt.appcontainers import ContainerAppsAPIClient
from azure.mgmt.appcontainers.models import (
    Configuration,
    Container,
    ContainerApp,
    EnvironmentVar,
    Ingress,
    Job,
    JobConfiguration,
    JobConfigurationManualTriggerConfig,
    JobTemplate,
    ManagedEnvironment,
    Scale,
    Template,
)


def step(what):
    print(f"sdk: {what}", file=sys.stderr, flush=True)


def main():
    rg = sys.argv[1]
    arm = os.environ["ARM_ENDPOINT"]
    sub = os.environ["AZURE_SUBSCRIPTION_ID"]
    cred = ManagedIdentityCredential()
    client = ContainerAppsAPIClient(
        cred,
        sub,
        base_url=arm,
        credential_scopes=["https://management.azure.com/.default"],
    )

    step("managed environment create")
    env = client.managed_environments.begin_create_or_update(
        rg, "sdk-env", ManagedEnvironment(location="eastus")
    ).result()
    assert env.provisioning_state == "Succeeded", env.provisioning_state

    step("container app create")
    app = ContainerApp(
        location="eastus",
        managed_environment_id=env.id,
        configuration=Configuration(ingress=Ingress(external=True, target_port=8080)),
        template=Template(
            containers=[Container(name="subject", image="probelab/subject:dev")],
            scale=Scale(min_replicas=1, max_replicas=1),
        ),
    )
    created = client.container_apps.begin_create_or_update(rg, "sdk-app", app).result()
    assert created.name == "sdk-app", created.name
    first = created.latest_revision_name

    step("container app update (a new revision)")
    created.template.containers[0].env = [EnvironmentVar(name="SDK_MARKER", value="1")]
    updated = client.container_apps.begin_update(rg, "sdk-app", created).result()
    latest = client.container_apps.get(rg, "sdk-app").latest_revision_name
    assert latest != first, (first, latest)
    if updated is not None:
        assert updated.name == "sdk-app"

    step("list at group and subscription scope")
    assert [a.name for a in client.container_apps.list_by_resource_group(rg)] == ["sdk-app"]
    assert "sdk-app" in [a.name for a in client.container_apps.list_by_subscription()]
    revisions = [r.name for r in client.container_apps_revisions.list_revisions(rg, "sdk-app")]
    assert latest in revisions, revisions

    step("revision restart")
    client.container_apps_revisions.restart_revision(rg, "sdk-app", latest)

    step("job create and start")
    job = Job(
        location="eastus",
        environment_id=env.id,
        configuration=JobConfiguration(
            trigger_type="Manual",
            replica_timeout=60,
            replica_retry_limit=0,
            manual_trigger_config=JobConfigurationManualTriggerConfig(
                parallelism=1, replica_completion_count=1
            ),
        ),
        template=JobTemplate(
            containers=[Container(name="worker", image="probelab/subject:dev")]
        ),
    )
    client.jobs.begin_create_or_update(rg, "sdk-job", job).result()
    execution = client.jobs.begin_start(rg, "sdk-job").result()
    names = [e.name for e in client.jobs_executions.list(rg, "sdk-job")]
    assert execution.name in names, (execution.name, names)

    print(json.dumps({"latest_revision": latest, "execution": execution.name}))


if __name__ == "__main__":
    main()
