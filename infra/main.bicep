// probelab on Azure: the environment the labs run in.
//
// What is here: Log Analytics, a VNet with an infrastructure subnet delegated to
// Microsoft.App/environments, a Container Apps environment (Consumption workload profile,
// log-analytics destination so the tables are ContainerAppConsoleLogs_CL and
// ContainerAppSystemLogs_CL), a registry with the admin user disabled, two user-assigned
// identities (pull: AcrPull on the registry; sampler: Reader on this resource group only) and the
// three jobs (loadgen, perturbation-sampler, audit).
//
// Deployed in two passes by labctl deploy: deployJobs=false first (everything but the jobs), then
// the images are pushed to the registry, then deployJobs=true. A job created before its image is
// in the registry fails to pull (the audit cron job would start within five minutes).
//
// What is NOT here: the subject apps. labctl creates each lab's apps through ARM from the lab
// file, the same code path as the local emulator, so a lab can change probes and env without
// touching this template. No identity in the environment can change apps: writes are the
// operator's own login (labctl).

targetScope = 'resourceGroup'

@description('Prefix of every resource name (lower case letters and digits, 3-12 characters).')
@minLength(3)
@maxLength(12)
param baseName string = 'probelab'

param location string = resourceGroup().location

@description('Registry name (globally unique, 5-50 alphanumerics). Defaults to baseName plus a suffix derived from the resource group.')
param registryName string = '${baseName}${uniqueString(resourceGroup().id)}'

@description('Image tag pushed by labctl deploy (git short sha, or dev).')
param imageTag string = 'dev'

@description('Zone redundancy for the environment. Turn off in regions without availability zones.')
param zoneRedundant bool = true

@description('When these resources may be deleted (ISO 8601 date), written to the expires-at tag.')
param expiresAt string

@description('Lab label written to the lab tag.')
param labName string = 'probelab'

@description('Deploy the three jobs. labctl deploy passes false on its first pass (the registry does not hold the images yet) and true on its second, after pushing them.')
param deployJobs bool = true

@description('Audit job: seconds between samples.')
param auditIntervalSeconds int = 30

@description('Audit job: replicaTimeout in seconds. The audit window is set 40 s under it so cron executions end Succeeded.')
param auditReplicaTimeout int = 240

var tags = {
  'expires-at': expiresAt
  managedBy: 'probelab-labctl'
  lab: labName
}

// Built-in role definition ids (same in every tenant).
var acrPullRoleId = '7f951dda-4ed3-4680-a7ca-43fe172d538d'
var readerRoleId = 'acdd72a7-3385-48ef-bd42-f606fba81ae7'

resource workspace 'Microsoft.OperationalInsights/workspaces@2023-09-01' = {
  name: '${baseName}-logs'
  location: location
  tags: tags
  properties: {
    sku: { name: 'PerGB2018' }
    retentionInDays: 30
  }
}

resource vnet 'Microsoft.Network/virtualNetworks@2024-05-01' = {
  name: '${baseName}-vnet'
  location: location
  tags: tags
  properties: {
    addressSpace: { addressPrefixes: ['10.60.0.0/16'] }
    subnets: [
      {
        name: 'infrastructure'
        properties: {
          // Workload-profile environments need at least a /27, delegated to Microsoft.App/environments.
          addressPrefix: '10.60.0.0/23'
          delegations: [
            {
              name: 'containerapps'
              properties: { serviceName: 'Microsoft.App/environments' }
            }
          ]
        }
      }
    ]
  }
}

resource registry 'Microsoft.ContainerRegistry/registries@2023-07-01' = {
  name: registryName
  location: location
  tags: tags
  sku: { name: 'Basic' }
  properties: {
    adminUserEnabled: false
  }
}

resource pullIdentity 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' = {
  name: '${baseName}-pull'
  location: location
  tags: tags
}

resource samplerIdentity 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' = {
  name: '${baseName}-sampler'
  location: location
  tags: tags
}

resource acrPull 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(registry.id, pullIdentity.id, acrPullRoleId)
  scope: registry
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', acrPullRoleId)
    principalId: pullIdentity.properties.principalId
    principalType: 'ServicePrincipal'
  }
}

resource samplerReader 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(resourceGroup().id, samplerIdentity.id, readerRoleId)
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', readerRoleId)
    principalId: samplerIdentity.properties.principalId
    principalType: 'ServicePrincipal'
  }
}

resource environment 'Microsoft.App/managedEnvironments@2024-03-01' = {
  name: '${baseName}-env'
  location: location
  tags: tags
  properties: {
    zoneRedundant: zoneRedundant
    vnetConfiguration: {
      infrastructureSubnetId: vnet.properties.subnets[0].id
      internal: false
    }
    workloadProfiles: [
      {
        name: 'Consumption'
        workloadProfileType: 'Consumption'
      }
    ]
    appLogsConfiguration: {
      destination: 'log-analytics'
      logAnalyticsConfiguration: {
        customerId: workspace.properties.customerId
        // The environment needs the shared key to ship logs; it stays inside this resource and
        // is never an output.
        sharedKey: workspace.listKeys().primarySharedKey
      }
    }
  }
}

var imagePrefix = '${registry.properties.loginServer}/probelab'

var samplerEnvCommon = [
  { name: 'SUBSCRIPTION_ID', value: subscription().subscriptionId }
  { name: 'RESOURCE_GROUP', value: resourceGroup().name }
  { name: 'ARM_TOKEN_SOURCE', value: 'managed-identity' }
  { name: 'MANAGED_IDENTITY_CLIENT_ID', value: samplerIdentity.properties.clientId }
  { name: 'AZURE_CLIENT_ID', value: samplerIdentity.properties.clientId }
]

module loadgenJob 'modules/job.bicep' = if (deployJobs) {
  name: 'job-loadgen'
  dependsOn: [acrPull]
  params: {
    name: '${baseName}-loadgen'
    location: location
    tags: tags
    environmentId: environment.id
    image: '${imagePrefix}/loadgen:${imageTag}'
    registryServer: registry.properties.loginServer
    pullIdentityId: pullIdentity.id
    triggerType: 'Manual'
    // Long enough for the full profile's longest phase (12 events x 600 s) plus margin.
    replicaTimeout: 14400
    cpu: '1.0'
    memory: '2Gi'
    // labctl sets these per run with update-then-start; the values here are placeholders a
    // manual start would use.
    env: [
      { name: 'SUBJECT_URL', value: 'http://subject' }
      { name: 'TARGET_RPS', value: '200' }
      { name: 'DURATION_SECONDS', value: '60' }
      { name: 'RUN_ID', value: 'manual' }
      { name: 'PERTURBATION_ID', value: 'none' }
    ]
  }
}

module samplerJob 'modules/job.bicep' = if (deployJobs) {
  name: 'job-perturbation-sampler'
  dependsOn: [acrPull, samplerReader]
  params: {
    name: '${baseName}-perturbation-sampler'
    location: location
    tags: tags
    environmentId: environment.id
    image: '${imagePrefix}/perturbation-sampler:${imageTag}'
    registryServer: registry.properties.loginServer
    pullIdentityId: pullIdentity.id
    runIdentityId: samplerIdentity.id
    triggerType: 'Manual'
    replicaTimeout: 14400
    env: concat(samplerEnvCommon, [
      { name: 'CONTAINER_APP_NAMES', value: 'subject' }
      { name: 'PERTURBATION_ID', value: 'manual' }
      { name: 'SAMPLE_INTERVAL_SECONDS', value: '5' }
      { name: 'SAMPLE_DURATION_SECONDS', value: '600' }
    ])
  }
}

module auditJob 'modules/job.bicep' = if (deployJobs) {
  name: 'job-audit'
  dependsOn: [acrPull, samplerReader]
  params: {
    name: '${baseName}-audit'
    location: location
    tags: tags
    environmentId: environment.id
    image: '${imagePrefix}/audit:${imageTag}'
    registryServer: registry.properties.loginServer
    pullIdentityId: pullIdentity.id
    runIdentityId: samplerIdentity.id
    triggerType: 'Schedule'
    cronExpression: '*/5 * * * *'
    replicaTimeout: auditReplicaTimeout
    env: concat(samplerEnvCommon, [
      { name: 'CONTAINER_APP_NAMES', value: 'subject' }
      { name: 'SAMPLE_INTERVAL_SECONDS', value: string(auditIntervalSeconds) }
      { name: 'AUDIT_WINDOW_SECONDS', value: string(auditReplicaTimeout - 40) }
      { name: 'RUN_LABEL', value: 'audit' }
    ])
  }
}

output environmentId string = environment.id
output environmentName string = environment.name
// Empty on the first pass: a conditional module's outputs may only be read when it is deployed.
output loadgenJobName string = deployJobs ? loadgenJob.outputs.name : ''
output samplerJobName string = deployJobs ? samplerJob.outputs.name : ''
output auditJobName string = deployJobs ? auditJob.outputs.name : ''
output pullIdentityId string = pullIdentity.id
output pullIdentityClientId string = pullIdentity.properties.clientId
output samplerIdentityClientId string = samplerIdentity.properties.clientId
output workspaceCustomerId string = workspace.properties.customerId
output registryLoginServer string = registry.properties.loginServer
output registryName string = registry.name
