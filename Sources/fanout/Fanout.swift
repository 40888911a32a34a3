import ArgumentParser
import FanoutProtocol

@main
struct Fanout: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fanout",
        abstract: "Subscribe, publish, ask and answer on a Fanout server, inspect it, and measure it.",
        discussion: """
            Examples:
              fanout sub 'news.>'                   print each message's payload
              fanout pub news.uk 'hello world'      publish; print the receivers
              tail -f app.log | fanout pub logs.app publish each input line
              fanout sub 'logs.>' | grep ERROR
              fanout sub --group workers jobs       one message to one member of the group
              fanout ask svc.time now               ask every responder; print each answer
              fanout answer svc.upper -- tr a-z A-Z answer each question with a command's output
              fanout who chat.room1                 list a subject's members, one per line
              fanout sub --presence chat.room1      print its joins and leaves as they happen
              fanout kick user=alice                close a user's connections (administrators)
              fanout info
              fanout bench --subscribers 100 --messages 200000

            Every subcommand takes --server HOST:PORT (or FANOUT_SERVER; default 127.0.0.1:7411) and \
            --timeout.

            Exit codes: 0 success, 1 the server answered -ERR (or kicked the connection), 2 cannot connect or \
            connection lost, \
            3 timed out, 4 ask got no answer, 64 bad usage, 65 ask --reduce met an answer it cannot reduce.
            """,
        version: FanoutVersion.current,
        subcommands: [
            Sub.self, Pub.self, Ask.self, Answer.self, Who.self, Kick.self, Info.self, Channels.self, Clients.self,
            Ping.self, Bench.self,
        ]
    )
}
