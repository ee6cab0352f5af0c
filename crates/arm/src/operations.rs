//! The typed Microsoft.App operations on [`ArmClient`]: container apps (the one
//! GET-modify-PATCH of a template, traffic), revisions, replicas, jobs and executions. Each is
//! one call of the transport in [`crate::client`] (`send`, `send_and_wait`, paging), which owns
//! retries, deadlines and long-running operations.

use crate::ArmError;
use crate::client::{ArmClient, Method, Scope, decode, segment, to_value};
use crate::models::{
    ContainerApp, Ingress, Job, JobExecution, JobExecutionBase, JobExecutionTemplate, Replica,
    Revision, Template, TrafficWeight,
};
use crate::template::set_env_in_template;

impl ArmClient {
    // ---- container apps ----------------------------------------------------------------------

    /// GET a container app.
    pub async fn get_app(&self, scope: &Scope, app: &str) -> Result<ContainerApp, ArmError> {
        let url = self.url(&Self::app_path(scope, app)?)?;
        self.get_json("get_app", url).await
    }

    /// Creates or replaces a container app (PUT) and waits for its operation; returns the app
    /// as it is afterwards.
    pub async fn put_app(
        &self,
        scope: &Scope,
        app: &str,
        body: &ContainerApp,
    ) -> Result<ContainerApp, ArmError> {
        let url = self.url(&Self::app_path(scope, app)?)?;
        let body = to_value(body)?;
        self.send_and_wait("put_app", Method::PUT, url, Some(&body))
            .await?;
        self.get_app(scope, app).await
    }

    /// Sets env var `name=value` on one container of the app's template (the container named
    /// `container`, or the first), keeping the rest of the template as it is, optionally with a
    /// new `revisionSuffix`; PATCHes the whole template, waits for the operation and returns the
    /// app as it is afterwards.
    pub async fn set_app_env(
        &self,
        scope: &Scope,
        app: &str,
        container: Option<&str>,
        name: &str,
        value: &str,
        revision_suffix: Option<&str>,
    ) -> Result<ContainerApp, ArmError> {
        self.update_app_template(scope, app, |template| {
            set_env_in_template(template, container, name, value)?;
            if let Some(suffix) = revision_suffix {
                template.revision_suffix = Some(suffix.to_owned());
            }
            Ok(())
        })
        .await
    }

    /// GET-modify-PATCH of an app's template: GETs the app, lets `change` edit its template
    /// (everything this crate does not model is kept), PATCHes the whole template back, waits
    /// for the operation and returns the app as it is afterwards.
    pub async fn update_app_template<F>(
        &self,
        scope: &Scope,
        app: &str,
        change: F,
    ) -> Result<ContainerApp, ArmError>
    where
        F: FnOnce(&mut Template) -> Result<(), ArmError>,
    {
        self.update_app(scope, app, change, None).await
    }

    /// GET-modify-PATCH of an app's template and its `ingress.traffic` in one ARM call (how a
    /// blue/green deployment creates a named revision and keeps the traffic where it is): GETs
    /// the app, lets `change` edit the template, replaces the ingress's traffic rules with
    /// `traffic` (the rest of the ingress as it is), PATCHes both, waits for the operation and
    /// returns the app as it is afterwards. Secrets are not sent (a GET does not return their
    /// values), so they stay as they are.
    pub async fn update_app_template_and_traffic<F>(
        &self,
        scope: &Scope,
        app: &str,
        change: F,
        traffic: Vec<TrafficWeight>,
    ) -> Result<ContainerApp, ArmError>
    where
        F: FnOnce(&mut Template) -> Result<(), ArmError>,
    {
        self.update_app(scope, app, change, Some(traffic)).await
    }

    /// The GET-modify-PATCH behind [`Self::update_app_template`] (`traffic` `None`: the template
    /// alone) and [`Self::update_app_template_and_traffic`].
    async fn update_app<F>(
        &self,
        scope: &Scope,
        app: &str,
        change: F,
        traffic: Option<Vec<TrafficWeight>>,
    ) -> Result<ContainerApp, ArmError>
    where
        F: FnOnce(&mut Template) -> Result<(), ArmError>,
    {
        let current = self.get_app(scope, app).await?;
        let mut template = Self::template_of(&current, app)?;
        change(&mut template)?;
        let body = match traffic {
            None => serde_json::json!({ "properties": { "template": template } }),
            Some(traffic) => serde_json::json!({ "properties": {
                "template": template,
                "configuration": { "ingress": Self::ingress_with(&current, app, traffic)? },
            } }),
        };
        self.patch_app(scope, app, &body).await
    }

    /// Replaces an app's `ingress.traffic` (multiple revision mode: a split, a switch) with one
    /// PATCH of its ingress (the rest as a GET returns it); waits for the operation and returns
    /// the app as it is afterwards.
    pub async fn set_app_traffic(
        &self,
        scope: &Scope,
        app: &str,
        traffic: Vec<TrafficWeight>,
    ) -> Result<ContainerApp, ArmError> {
        let current = self.get_app(scope, app).await?;
        let ingress = Self::ingress_with(&current, app, traffic)?;
        let body = serde_json::json!({ "properties": { "configuration": { "ingress": ingress } } });
        self.patch_app(scope, app, &body).await
    }

    /// PATCHes `body` onto the app, waits for the operation, and returns the app afterwards.
    async fn patch_app(
        &self,
        scope: &Scope,
        app: &str,
        body: &serde_json::Value,
    ) -> Result<ContainerApp, ArmError> {
        let url = self.url(&Self::app_path(scope, app)?)?;
        self.send_and_wait("patch_app", Method::PATCH, url, Some(body))
            .await?;
        self.get_app(scope, app).await
    }

    /// `current`'s template (everything this crate does not model kept).
    fn template_of(current: &ContainerApp, app: &str) -> Result<Template, ArmError> {
        current
            .properties
            .template
            .clone()
            .ok_or_else(|| ArmError::Invalid(format!("app {app} has no template")))
    }

    /// `current`'s ingress with its traffic rules replaced by `traffic`.
    fn ingress_with(
        current: &ContainerApp,
        app: &str,
        traffic: Vec<TrafficWeight>,
    ) -> Result<Ingress, ArmError> {
        let mut ingress = current
            .properties
            .configuration
            .as_ref()
            .and_then(|c| c.ingress.clone())
            .ok_or_else(|| {
                ArmError::Invalid(format!("app {app} has no ingress: traffic rules need one"))
            })?;
        ingress.traffic = traffic;
        Ok(ingress)
    }

    /// Lists an app's revisions, following `nextLink`.
    pub async fn list_revisions(
        &self,
        scope: &Scope,
        app: &str,
    ) -> Result<Vec<Revision>, ArmError> {
        let url = self.url(&format!("{}/revisions", Self::app_path(scope, app)?))?;
        self.list_all("list_revisions", url).await
    }

    /// Lists a revision's replicas.
    pub async fn list_replicas(
        &self,
        scope: &Scope,
        app: &str,
        revision: &str,
    ) -> Result<Vec<Replica>, ArmError> {
        let url = self.url(&format!(
            "{}/revisions/{}/replicas",
            Self::app_path(scope, app)?,
            segment("revision", revision)?
        ))?;
        self.list_all("list_replicas", url).await
    }

    async fn revision_action(
        &self,
        scope: &Scope,
        app: &str,
        revision: &str,
        action: &str,
    ) -> Result<(), ArmError> {
        let url = self.url(&format!(
            "{}/revisions/{}/{action}",
            Self::app_path(scope, app)?,
            segment("revision", revision)?
        ))?;
        let op = format!("{action}_revision");
        self.send_and_wait(&op, Method::POST, url, None).await?;
        Ok(())
    }

    /// Restarts a revision (its replicas are replaced).
    pub async fn restart_revision(
        &self,
        scope: &Scope,
        app: &str,
        rev: &str,
    ) -> Result<(), ArmError> {
        self.revision_action(scope, app, rev, "restart").await
    }

    /// Activates a revision.
    pub async fn activate_revision(
        &self,
        scope: &Scope,
        app: &str,
        rev: &str,
    ) -> Result<(), ArmError> {
        self.revision_action(scope, app, rev, "activate").await
    }

    /// Deactivates a revision.
    pub async fn deactivate_revision(
        &self,
        scope: &Scope,
        app: &str,
        rev: &str,
    ) -> Result<(), ArmError> {
        self.revision_action(scope, app, rev, "deactivate").await
    }

    // ---- jobs --------------------------------------------------------------------------------

    /// GET a job.
    pub async fn get_job(&self, scope: &Scope, job: &str) -> Result<Job, ArmError> {
        let url = self.url(&Self::job_path(scope, job)?)?;
        self.get_json("get_job", url).await
    }

    /// Creates or replaces a job (PUT) and waits for its operation; returns the job afterwards.
    pub async fn put_job(&self, scope: &Scope, job: &str, body: &Job) -> Result<Job, ArmError> {
        let url = self.url(&Self::job_path(scope, job)?)?;
        let body = to_value(body)?;
        self.send_and_wait("put_job", Method::PUT, url, Some(&body))
            .await?;
        self.get_job(scope, job).await
    }

    /// Sets env var `name=value` on one container of the job's template (see
    /// [`ArmClient::set_app_env`]) and returns the job afterwards.
    pub async fn set_job_env(
        &self,
        scope: &Scope,
        job: &str,
        container: Option<&str>,
        name: &str,
        value: &str,
    ) -> Result<Job, ArmError> {
        let current = self.get_job(scope, job).await?;
        let mut template = current
            .properties
            .template
            .ok_or_else(|| ArmError::Invalid(format!("job {job} has no template")))?;
        set_env_in_template(&mut template, container, name, value)?;
        let body = serde_json::json!({ "properties": { "template": template } });
        let url = self.url(&Self::job_path(scope, job)?)?;
        self.send_and_wait("patch_job", Method::PATCH, url, Some(&body))
            .await?;
        self.get_job(scope, job).await
    }

    /// Starts a job execution, optionally overriding its containers.
    pub async fn start_job(
        &self,
        scope: &Scope,
        job: &str,
        template: Option<&JobExecutionTemplate>,
    ) -> Result<JobExecutionBase, ArmError> {
        let url = self.url(&format!("{}/start", Self::job_path(scope, job)?))?;
        let body = template.map(to_value).transpose()?;
        let first = self
            .send("start_job", Method::POST, url, body.as_ref())
            .await?;
        // The answer names the new execution (200, or 202 + Location on Azure). Once it has a
        // name the execution exists: return without waiting, since the Location of a running
        // execution may keep answering 202 until it ends.
        if !first.body.is_empty()
            && let Ok(started) = serde_json::from_slice::<JobExecutionBase>(&first.body)
            && !started.name.is_empty()
        {
            return Ok(started);
        }
        let last = self.wait_lro("start_job", first).await?;
        decode("start_job", &last.body)
    }

    /// Lists a job's executions, following `nextLink`.
    pub async fn list_executions(
        &self,
        scope: &Scope,
        job: &str,
    ) -> Result<Vec<JobExecution>, ArmError> {
        let url = self.url(&format!("{}/executions", Self::job_path(scope, job)?))?;
        self.list_all("list_executions", url).await
    }

    /// GET one execution.
    pub async fn get_execution(
        &self,
        scope: &Scope,
        job: &str,
        execution: &str,
    ) -> Result<JobExecution, ArmError> {
        let url = self.url(&format!(
            "{}/executions/{}",
            Self::job_path(scope, job)?,
            segment("execution", execution)?
        ))?;
        self.get_json("get_execution", url).await
    }

    /// Stops one execution.
    pub async fn stop_execution(
        &self,
        scope: &Scope,
        job: &str,
        execution: &str,
    ) -> Result<(), ArmError> {
        let url = self.url(&format!(
            "{}/executions/{}/stop",
            Self::job_path(scope, job)?,
            segment("execution", execution)?
        ))?;
        self.send_and_wait("stop_execution", Method::POST, url, None)
            .await?;
        Ok(())
    }
}
