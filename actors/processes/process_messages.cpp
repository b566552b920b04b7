/// The message types of a run of several processes, registered with CAF.

#include "processes/process_protocol.hpp"

#include <caf/actor_system_config.hpp>

namespace actorpipe::actors {

void add_process_message_types(caf::actor_system_config& config) {
  config.add_message_type<Parcel>("actorpipe::parcel");
  config.add_message_type<transport::TensorTicket>("actorpipe::tensor_ticket");
  config.add_message_type<std::vector<transport::TensorTicket>>("actorpipe::tensor_tickets");
  config.add_message_type<JobOrder>("actorpipe::job_order");
  config.add_message_type<StageWiring>("actorpipe::stage_wiring");
  config.add_message_type<std::vector<StageWiring>>("actorpipe::stage_wirings");
  config.add_message_type<StageTrace>("actorpipe::stage_trace");
  config.add_message_type<std::vector<StageTrace>>("actorpipe::stage_traces");
  config.add_message_type<stage_actor>("actorpipe::stage_actor");
  config.add_message_type<std::vector<stage_actor>>("actorpipe::stage_actors");
  config.add_message_type<HostedStages>("actorpipe::hosted_stages");
  config.add_message_type<averager_actor>("actorpipe::averager_actor");   // its vector too
  config.add_message_type<std::vector<std::uint64_t>>("actorpipe::u64s"); // a group's pipelines and steps
  config.add_message_type<group_scheduler_actor>("actorpipe::group_scheduler_actor");
  config.add_message_type<parameter_server_actor>("actorpipe::parameter_server_actor");
  config.add_message_type<server_copy_actor>("actorpipe::server_copy_actor"); // its vector too
  config.add_message_type<pipeline_actor>("actorpipe::pipeline_actor");
  config.add_message_type<job_actor>("actorpipe::job_actor");
  config.add_message_type<stage_host_actor>("actorpipe::stage_host_actor");
}

} // namespace actorpipe::actors
