// Typed exceptions. Library code never exits: it throws one of these and the caller decides.
//   InvalidArgument  a user's setting is wrong (names the field, the value and what is accepted)
//   DeviceUnavailable  a device was asked for that this machine does not have
//   OutOfMemory      an allocation failed during a run (a result for sweeps, not a crash)
//   PredictedOutOfMemory  a run refused before it starts: its predicted peak exceeds the free memory
//   CommunicationError  a collective or the rendezvous failed (a peer died, hung past the timeout, ...)
//   ConfigurationMismatch  ranks of one job were started with different settings
#pragma once

#include <stdexcept>
#include <string>

namespace tvie {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class InvalidArgument : public Error {
 public:
  // field: the settings field ("train.batch_size"); value: what was given; accepted: what would do.
  InvalidArgument(std::string field, std::string value, std::string accepted)
      : Error(field + ": got '" + value + "'; accepted: " + accepted),
        field_(std::move(field)),
        value_(std::move(value)),
        accepted_(std::move(accepted)) {}
  const std::string& field() const { return field_; }
  const std::string& value() const { return value_; }
  const std::string& accepted() const { return accepted_; }

 private:
  std::string field_, value_, accepted_;
};

class DeviceUnavailable : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};

class OutOfMemory : public Error {
 public:
  using Error::Error;
};
// Refused before anything was built: the run's predicted peak exceeds the device's free memory.
class PredictedOutOfMemory : public OutOfMemory {
 public:
  using OutOfMemory::OutOfMemory;
};

class CommunicationError : public Error {
 public:
  using Error::Error;
};

class ConfigurationMismatch : public Error {
 public:
  using Error::Error;
};

}  // namespace tvie
