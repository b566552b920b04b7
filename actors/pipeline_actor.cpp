/// Pipeline actor: one step of one pipeline.

#include "pipeline_actor.hpp"

#include "base/text.hpp"

#include <caf/all.hpp>

#include <cmath>
#include <map>

namespace actorpipe::actors {

namespace {

/// A step fed to the stages and not yet answered; the next one may be fed while this
/// one runs.
struct Pending {
  caf::typed_response_promise<double> reply;
  std::size_t done = 0; ///< stages that have stepped
  double loss_sum = 0;
  std::size_t normed = 0; ///< stages whose gradients' square sums are in
  double square_sum = 0;  ///< theirs, summed
};

struct PipelineState {
  PipelineConfig config;
  std::uint32_t share = 0; ///< samples of this pipeline per batch
  std::uint64_t next = 1;  ///< the number of its next step
  std::map<std::uint64_t, Pending> steps;
  static inline const char* name = "pipeline";
};

pipeline_actor::behavior_type pipeline_behavior(pipeline_actor::stateful_pointer<PipelineState> self,
                                                PipelineConfig config) {
  auto& st = self->state;
  st.config = std::move(config);
  st.next = st.config.first_step;
  for (auto n : st.config.micro_batch_sizes)
    st.share += n;
  return {
      [=](step_atom, std::uint64_t, Parcel& inputs_parcel, Parcel& labels_parcel) -> caf::result<double> {
        auto& st = self->state;
        const PipelineConfig& c = st.config;
        train::Payload inputs, labels;
        try {
          inputs = open(inputs_parcel, nullptr, c.make_rows).take();
          labels = open(labels_parcel, nullptr, c.make_rows).take();
        } catch (const std::exception& e) {
          return caf::make_error(caf::sec::runtime_error,
                                 std::string("making its share of a batch: ") + text::message_of(e));
        }
        // Its own count: with an asynchronous policy a pipeline gets some of the run's
        // steps, not each; with a lockstep one both counts agree.
        const std::uint64_t step = st.next++;
        Pending& pending = st.steps[step];
        pending.reply = self->make_response_promise<double>();
        const auto input_parts = train::split_rows(inputs, c.micro_batch_sizes);
        const auto label_parts = train::split_rows(labels, c.micro_batch_sizes);
        const stage_actor& first = c.stages.front();
        const stage_actor& last = c.stages.back();
        for (std::size_t m = 0; m < c.micro_batch_sizes.size(); ++m) {
          // The micro-batch's mean loss × its share of the whole batch: the gradients
          // of all micro-batches of all pipelines then sum to the batch mean's.
          const double scale = static_cast<double>(c.micro_batch_sizes[m]) / c.batch_size;
          self->send(last, labels_atom::value, step, static_cast<std::uint64_t>(m), pack(label_parts[m], c.to_last),
                     scale);
          self->send(first, forward_atom::value, step, static_cast<std::uint64_t>(m), pack(input_parts[m], c.to_first));
        }
        return pending.reply;
      },
      [=](done_atom, std::uint64_t step, std::uint64_t, double loss_sum) {
        auto& st = self->state;
        const auto it = st.steps.find(step);
        if (it == st.steps.end()) return;
        it->second.loss_sum += loss_sum;
        if (++it->second.done < st.config.stages.size()) return;
        it->second.reply.deliver(it->second.loss_sum / st.share);
        st.steps.erase(it);
      },
      [=](norm_atom, std::uint64_t step, double square_sum) {
        // Clipping: once every stage's part is in, each hears the norm of the model's
        // gradient, by which they all clip alike.
        auto& st = self->state;
        const auto it = st.steps.find(step);
        if (it == st.steps.end()) return;
        it->second.square_sum += square_sum;
        if (++it->second.normed < st.config.stages.size()) return;
        const double norm = std::sqrt(it->second.square_sum);
        for (const stage_actor& stage : st.config.stages)
          self->send(stage, norm_atom::value, step, norm);
      },
  };
}

} // namespace

pipeline_actor spawn_pipeline(caf::actor_system& system, PipelineConfig config) {
  return system.spawn(pipeline_behavior, std::move(config));
}

} // namespace actorpipe::actors
