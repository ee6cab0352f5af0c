// One Container Apps Job running one of probelab's images.
// Manual jobs are started by labctl (update-then-start); the audit job runs on a cron schedule.

@description('Job name, e.g. probelab-loadgen.')
param name string
param location string
param tags object
param environmentId string
@description('Full image reference, e.g. myacr.azurecr.io/probelab/loadgen:1a2b3c4.')
param image string
param registryServer string
@description('Resource id of the user-assigned identity that pulls from the registry (AcrPull).')
param pullIdentityId string
@description('Resource id of an extra user-assigned identity the container uses (e.g. the sampler identity), or empty.')
param runIdentityId string = ''
@allowed(['Manual', 'Schedule'])
param triggerType string = 'Manual'
@description('Cron expression for Schedule jobs (UTC).')
param cronExpression string = ''
@description('Seconds before Container Apps kills a replica of an execution.')
param replicaTimeout int
@description('Environment variables: a list of {name, value}.')
param env array
param cpu string = '0.5'
param memory string = '1Gi'

var pullOnly = { '${pullIdentityId}': {} }
var pullAndRun = union(pullOnly, empty(runIdentityId) ? {} : { '${runIdentityId}': {} })

var scheduleTrigger = { cronExpression: cronExpression, parallelism: 1, replicaCompletionCount: 1 }

resource job 'Microsoft.App/jobs@2024-03-01' = {
  name: name
  location: location
  tags: tags
  identity: {
    type: 'UserAssigned'
    userAssignedIdentities: pullAndRun
  }
  properties: {
    environmentId: environmentId
    workloadProfileName: 'Consumption'
    configuration: {
      triggerType: triggerType
      replicaTimeout: replicaTimeout
      replicaRetryLimit: 0
      manualTriggerConfig: triggerType == 'Manual' ? { parallelism: 1, replicaCompletionCount: 1 } : null
      scheduleTriggerConfig: triggerType == 'Schedule' ? scheduleTrigger : null
      registries: [
        {
          server: registryServer
          identity: pullIdentityId
        }
      ]
    }
    template: {
      containers: [
        {
          name: 'main'
          image: image
          env: env
          resources: {
            cpu: json(cpu)
            memory: memory
          }
        }
      ]
    }
  }
}

output name string = job.name
