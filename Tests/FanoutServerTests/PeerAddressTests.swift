import FanoutEventLoop
@testable import FanoutServer
import Testing

@Suite("PeerAddress")
struct PeerAddressTests {
    /// CLIENTS, logs and the per-address count see the same text as before the address was kept compactly.
    @Test(arguments: ["127.0.0.1:7411", "10.200.3.255:65535", "0.0.0.0:0", "255.255.255.255:1", "[::1]:80",
                      "[2001:db8:85a3::8a2e:370:7334]:54321", "unix:/run/fanout/fanoutd.sock"])
    func formatsAsTheSocketAddressDoes(text: String) throws {
        let address = try SocketAddress(parsing: text)
        #expect(PeerAddress(address).description == address.description)
    }

    @Test func anIPv4PeerIsKeptInPlace() throws {
        guard case .ipv4 = PeerAddress(try SocketAddress(parsing: "192.168.1.20:40000")) else {
            Issue.record("an IPv4 peer took a reference")
            return
        }
        #expect(MemoryLayout<PeerAddress>.size == 8, "one word in the connection")
    }
}
