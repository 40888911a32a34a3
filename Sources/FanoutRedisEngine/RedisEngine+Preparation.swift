import FanoutEngine
import FanoutRedis

/// After each connection to a shard, before it is used: the scripts are loaded and the shard epoch is
/// checked against the Redis run that holds it (`EngineScripts.checkEpoch`).
extension RedisEngine {
    /// What a connection's preparation has learned so far.
    private final class Preparation {
        var answered = 0
        var failure: String?
        var runID: String?
        var appendOnly = false
        var fsyncAlways = false
    }

    func prepare(_ shard: RedisShard, done: @escaping (String?) -> Void) {
        // A fresh candidate for every connection: one that a script adopted unseen (a shard epoch key lost
        // while connected) is never offered again.
        candidateEpoch = MemoryEngine.freshEpoch()
        let preparation = Preparation()
        // Two script loads and the epoch check; the check waits for what Redis says of itself.
        func finish() {
            preparation.answered += 1
            if preparation.answered == 3 { done(preparation.failure) }
        }
        for (index, script) in [EngineScripts.publish, EngineScripts.replay].enumerated() {
            shard.sendDuringPreparation(RedisCommand.encode(["SCRIPT", "LOAD", script])) { [unowned self] result in
                switch result {
                case .success(let reply) where reply.bytes != nil:
                    if index == 0 { self.publishing.script = reply.bytes! } else { self.replaySHA = reply.bytes! }
                case .success(let reply):
                    preparation.failure = "SCRIPT LOAD: \(reply)"
                case .failure(let error):
                    preparation.failure = "SCRIPT LOAD: \(error)"
                }
                finish()
            }
        }
        // Redis answers in order, so the check is sent once the last of these three is answered.
        var known = 0
        func learned() {
            known += 1
            guard known == 3 else { return }
            checkEpoch(on: shard, preparation) { failure in
                if let failure { preparation.failure = failure }
                finish()
            }
        }
        shard.sendDuringPreparation(RedisCommand.encode(["INFO", "server"])) { result in
            if case .success(let reply) = result, let text = reply.text {
                preparation.runID = Self.field("run_id", in: text)
            }
            learned()
        }
        // A managed Redis may refuse CONFIG: the shard then counts as one that can lose writes on a restart.
        shard.sendDuringPreparation(RedisCommand.encode(["CONFIG", "GET", "appendonly"])) { result in
            preparation.appendOnly = Self.configValue(result) == "yes"
            learned()
        }
        shard.sendDuringPreparation(RedisCommand.encode(["CONFIG", "GET", "appendfsync"])) { result in
            preparation.fsyncAlways = Self.configValue(result) == "always"
            learned()
        }
    }

    private func checkEpoch(on shard: RedisShard, _ preparation: Preparation, done: @escaping (String?) -> Void) {
        guard let runID = preparation.runID else { return done("INFO server: no run_id") }
        let durable = preparation.appendOnly && preparation.fsyncAlways
        let command = RedisCommand.encode([
            "EVAL", EngineScripts.checkEpoch, "2", SubjectKeys.shardEpochKey, SubjectKeys.shardRunKey,
            candidateEpoch, runID, durable ? "1" : "0",
        ])
        shard.sendDuringPreparation(command) { [unowned self] result in
            switch result {
            case .success(.string(let epoch)):
                self.noteShardEpoch(String(decoding: epoch, as: UTF8.self), shard: shard)
                done(nil)
            case .success(let reply):
                done("epoch: \(reply)")
            case .failure(let error):
                done("epoch: \(error)")
            }
        }
    }

    private func noteShardEpoch(_ epoch: String, shard: RedisShard) {
        if let known = shardStates[shard.index].epoch, known != epoch {
            onNewEpoch("shard \(shard.endpoint)", epoch)
        }
        shardStates[shard.index].epoch = epoch
        // A token that became an epoch is not offered again: a shard that later loses its data must get a
        // name never used before.
        if epoch == candidateEpoch { candidateEpoch = MemoryEngine.freshEpoch() }
    }

    /// `value` of `name:value` in an INFO reply's lines.
    static func field(_ name: String, in info: String) -> String? {
        for line in info.split(whereSeparator: \.isNewline) where line.hasPrefix(name + ":") {
            return String(line.dropFirst(name.count + 1))
        }
        return nil
    }

    /// The value of a `CONFIG GET <name>` reply (`[name, value]`), or nil when refused.
    private static func configValue(_ result: Result<RedisReply, RedisFailure>) -> String? {
        guard case .success(let reply) = result, let parts = reply.elements, parts.count == 2 else { return nil }
        return parts[1].text
    }
}
