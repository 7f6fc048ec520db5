"""cloud: terraform/pulumi destroy, recursive bucket deletes, deleting cloud resources."""

from __future__ import annotations

from kilo_loop.guard.packs.rules import Pack, Rule, operands
from kilo_loop.guard.shell.model import SimpleCommand, has_option

_AWS_VALUE = ("--profile", "--region", "--output", "--endpoint-url", "--query")
_TF = ("terraform", "tofu", "terragrunt")
_DESTROYS = "destroys infrastructure"


def _cloud_delete(cmd: SimpleCommand, paths: object) -> str | None:
    """`aws ec2 terminate-instances`, `gcloud compute instances delete`, `az group delete`…"""
    found = operands(cmd.args, _AWS_VALUE)
    verbs = ("delete", "terminate", "remove", "destroy", "purge", "deregister", "rb", "rm", "reset")
    for word in found[:5]:
        verb = word.rsplit(":", 1)[-1]  # heroku's `apps:destroy`
        parts = verb.split("-")
        if any(verb == v or verb.startswith(v + "-") for v in verbs) or (
                parts[0] in ("batch", "bulk", "force") and any(p in verbs for p in parts[1:])):
            return f"`{word}` deletes cloud resources"
    return None


PACK = Pack(
    name="cloud",
    title="cloud/terraform: terraform/pulumi destroy, aws/gcloud/az deletes, recursive bucket deletes",
    rules=(
        Rule("terraform-destroy", _DESTROYS, _TF, words=("destroy",)),
        Rule("terraform-destroy", _DESTROYS, _TF, words=("apply",), flags=("-destroy", "--destroy")),
        Rule("terraform-destroy", "removes resources from the state", _TF, words=("state", "rm")),
        Rule("terraform-destroy", _DESTROYS, ("pulumi",), words=("destroy",)),
        Rule("terraform-destroy", _DESTROYS, ("cdk", "cdktf", "sst", "serverless", "sls"), words=("destroy",)),
        Rule("cloud-storage-delete", "deletes a bucket's objects recursively", ("aws",), words=("s3", "rm"),
             flags=("--recursive",)),
        Rule("cloud-storage-delete", "deletes a bucket", ("aws",), words=("s3", "rb")),
        Rule("cloud-storage-delete", "sync --delete removes objects the source lacks", ("aws",),
             words=("s3", "sync"), flags=("--delete",)),
        Rule("cloud-storage-delete", "deletes objects recursively", ("gsutil",), words=("rm",),
             flags=("-r", "-R", "-a")),
        Rule("cloud-storage-delete", "deletes a bucket", ("gsutil",), words=("rb",)),
        Rule("cloud-storage-delete", "rsync -d deletes what the source lacks", ("gsutil",), words=("rsync",),
             flags=("-d", "-D", "--delete-unmatched-destination-objects")),
        Rule("cloud-storage-delete", "rsync --delete-unmatched-destination-objects deletes what the source lacks",
             ("gcloud",), words=("storage", "rsync"), flags=("--delete-unmatched-destination-objects",)),
        Rule("cloud-storage-delete", "sync --delete-destination deletes what the source lacks", ("azcopy",),
             words=("sync",), check=lambda c, p: "" if any(a.lower().startswith("--delete-destination") and
                                                            not a.lower().endswith("=false") for a in c.args)
             else None),
        Rule("cloud-storage-delete", "sync --delete deletes what the source lacks", ("s5cmd",), words=("sync",),
             flags=("--delete",)),
        Rule("cloud-storage-delete", "mirror --remove deletes what the source lacks", ("mc",), words=("mirror",),
             flags=("--remove",)),
        Rule("cloud-storage-delete", "deletes objects recursively", ("gcloud",), words=("storage", "rm"),
             flags=("-r", "--recursive")),
        Rule("terraform-destroy", "deletes a workspace and its state", _TF, words=("workspace", "delete")),
        Rule("terraform-destroy", "deletes a stack and its state", ("pulumi",), words=("stack", "rm")),
        Rule("terraform-destroy", "removes resources from the state", ("pulumi",), words=("state", "delete")),
        Rule("terraform-destroy", _DESTROYS, ("sam",), words=("delete",)),
        Rule("terraform-destroy", _DESTROYS, ("serverless", "sls"), words=("remove",)),
        Rule("terraform-destroy", _DESTROYS, ("copilot",), check=lambda c, p: "" if "delete" in c.args else None),
        Rule("cloud-storage-delete", "deletes remote files", ("rclone",),
             check=lambda c, p: "" if operands(c.args)[:1] and operands(c.args)[0] in (
                 "purge", "delete", "deletefile", "rmdir", "rmdirs", "cleanup", "sync", "move") else None),
        Rule("cloud-storage-delete", "deletes every object a wildcard matches", ("gsutil",), words=("rm",),
             check=lambda c, p: "" if any("*" in a for a in operands(c.args)[1:]) else None),
        Rule("cloud-storage-delete", "deletes objects recursively", ("s3cmd",), words=("del",),
             flags=("-r", "--recursive")),
        Rule("cloud-storage-delete", "deletes a bucket", ("s3cmd",), words=("rb",)),
        Rule("cloud-storage-delete", "deletes objects recursively", ("mc",), words=("rm",),
             flags=("-r", "--recursive")),
        Rule("cloud-storage-delete", "deletes a bucket", ("mc",), words=("rb",)),
        Rule("terraform-destroy", "writes a plan that destroys everything, to be applied", _TF, words=("plan",),
             flags=("-destroy",), check=lambda c, p: None if "-destroy=false" in c.args or not has_option(
                 c.args, "-out", "--out") else ""),
        Rule("terraform-destroy", "destroys and recreates a resource (its data with it)", _TF, words=("apply",),
             flags=("-replace",)),
        Rule("terraform-destroy", _DESTROYS, ("terragrunt",), words=("destroy-all",)),
        Rule("terraform-destroy", _DESTROYS, ("pulumi",), words=("down",)),
        Rule("cloud-storage-delete", "deletes objects", ("s5cmd",), words=("rm",)),
        Rule("cloud-delete", "deletes cloud resources", ("aws", "gcloud", "az", "doctl", "flyctl", "fly", "heroku",
                                                         "vercel", "netlify", "hcloud", "linode-cli", "scw",
                                                         "exo", "oci", "ibmcloud", "wrangler", "railway", "render",
                                                         "upcloud", "vultr-cli", "civo"),
             check=_cloud_delete),
        Rule("cloud-delete", "deletes data in Firebase", ("firebase",), check=lambda c, p: "" if any(
            w.endswith(":delete") or w in ("firestore:delete", "database:remove", "hosting:disable")
            for w in operands(c.args)[:1]) else None),
        Rule("cloud-delete", "resets the database", ("supabase",), words=("db", "reset")),
        Rule("cloud-delete", "runs a shell command on cloud machines, which the guard cannot see",
             ("aws",), words=("ssm", "send-command")),
    ),
    value_options={"aws": _AWS_VALUE},
)
