-- Argo CD health check for memory.agentmem.io/MemoryAdapter (docs/operator.md#health-for-gitops-tools).
-- Install it in argocd-cm under resource.customizations.health.memory.agentmem.io_MemoryAdapter.
-- It reads the conditions the operator writes for GitOps tools: Stalled (a person must act)
-- is Degraded, Ready True is Healthy, ScaledToZero is Suspended, anything else Progressing.
local hs = {}
hs.status = "Progressing"
hs.message = "Waiting for the operator's first status"
if obj.status == nil or obj.status.conditions == nil then
  return hs
end
if obj.metadata.generation ~= nil and obj.status.observedGeneration ~= nil and obj.status.observedGeneration < obj.metadata.generation then
  hs.message = "Waiting for the operator to observe generation " .. obj.metadata.generation
  return hs
end
local ready = nil
for _, c in ipairs(obj.status.conditions) do
  if c.type == "Stalled" and c.status == "True" then
    hs.status = "Degraded"
    hs.message = c.reason .. ": " .. c.message
    return hs
  end
  if c.type == "Ready" then
    ready = c
  end
end
if ready == nil then
  return hs
end
if ready.status == "True" then
  hs.status = "Healthy"
elseif ready.reason == "ScaledToZero" then
  hs.status = "Suspended"
end
hs.message = ready.reason .. ": " .. ready.message
return hs
