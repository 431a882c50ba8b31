// Package bootimage decides which boot image each Machine API MachineSet should boot new
// machines from, by the rules of MCO's boot image controller
// (pkg/controller/bootimage): so that a node scaled up today boots an image close to
// the cluster's release rather than the one the cluster was installed with.
//
//   - Select reads MachineConfiguration/cluster's managedBootImages machine managers:
//     mode All, None or Partial (a label selector over MachineSet labels), with MCO's
//     default when none is given (All on AWS and GCP, None elsewhere: boot images are
//     opt-in on Azure and vSphere, as in MCO 4.21), and sets aside
//     MachineSets owned by another object and Windows MachineSets.
//   - ParseStream reads the target images from the coreos-bootimages ConfigMap's CoreOS
//     stream metadata.
//   - Reconcile compares one MachineSet with its target: the AMI of its region on AWS
//     (providerSpec.value.ami.id), the image of every boot disk on GCP
//     (providerSpec.value.disks[].image), the marketplace image of its offering and
//     Hyper-V generation on Azure (providerSpec.value.image), a template of the OVA's
//     release on vSphere (providerSpec.value.template, only through a VSphereTemplates
//     that reaches vCenter). It returns the JSON merge patch to apply, or why the
//     MachineSet is up to date or skipped (a custom image, no AMI ID, a region the
//     stream does not cover, no vCenter, ...).
//   - UpgradeStub upgrades the Ignition spec 2.x stub in a MachineSet's user-data
//     secret to spec 3 before its MachineSet is patched, for the subset of spec 2 that
//     stubs use, and refuses anything else with an error that says what to fix.
//   - InferPlatform names the platform from the MachineSets' providerSpecs where no
//     Infrastructure/cluster says it, and DefaultArch the architecture of MachineSets
//     that name none: the control plane's, as MCO takes it.
//   - SetConditions writes the BootImageUpdateProgressing and BootImageUpdateDegraded
//     conditions with MCO's messages.
//   - SkewStatus, RecordSync and CheckSkew derive status.bootImageSkewEnforcementStatus
//     from spec.bootImageSkewEnforcement as MCO does, record the stream's release once
//     every MachineSet boots it, and compare the cluster's boot image version with the
//     release's limit; SetSkewCondition reports it.
//
// Everything here is pure: the controller lists, fetches and patches; this package
// decides. For ControlPlaneMachineSets, CPMSMode reads the manager (All or None;
// Partial refused as MCO's CEL refuses it), ReconcileCPMS decides the patch of the
// template (AWS, Azure and GCP, as MCO), CheckCPMS does both for all of them, and
// HotLoopGuard keys the controller's refusal after HotLoopLimit reverts
// (CPMSHotLoopError). Cluster API resources are not managed: their counts in the
// condition messages are always 0 of 0, as in MCO, which has only the counters.
package bootimage
