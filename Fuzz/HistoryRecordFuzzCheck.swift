// 6. As a history segment (HistoryRecordReader): reading never traps or reads outside the bytes, stops at a
//    stated offset, and every record it hands out encodes back to the very bytes it came from. The input is
//    also made into a record (its first byte the subject's length, the rest subject and payload, any bytes):
//    that reads back whole, and every shorter prefix of it is a truncated tail, never a record or damage.

func checkHistoryRecords(_ bytes: UnsafeRawBufferPointer) {
    var reader = HistoryRecordReader(bytes, segment: 1)
    var last = 0
    while let record = reader.next() {
        precondition(reader.offset > last && reader.offset <= bytes.count, "the reader went backwards or past the end")
        let again = HistoryRecord(seq: record.seq, serial: record.serial, wallNanoseconds: record.wallNanoseconds,
                                  subject: Array(record.subject), payload: Array(record.payload)).encoded(segment: 1)
        precondition(again.elementsEqual(bytes[last..<reader.offset]), "a record read does not encode back the same")
        last = reader.offset
    }
    switch reader.stop {
    case .end: precondition(last == bytes.count, "end before the last byte")
    case .truncated(let offset), .corrupt(let offset): precondition(offset == last, "stopped elsewhere than it read to")
    case nil: preconditionFailure("no reason to stop")
    }

    guard let first = bytes.first else { return }
    let subjectLength = min(Int(first) + 1, bytes.count - 1)
    guard subjectLength > 0 else { return }
    let subject = Array(bytes[1..<(1 + subjectLength)])
    let payload = Array(bytes[(1 + subjectLength)...])
    let encoded = HistoryRecord(seq: UInt64(bytes.count), serial: 3, wallNanoseconds: -1, subject: subject,
                                payload: payload).encoded(segment: 1)
    encoded.withUnsafeBytes { whole in
        var reader = HistoryRecordReader(whole, segment: 1)
        let record = reader.next()
        precondition(record.map { Array($0.subject) == subject && Array($0.payload) == payload } == true,
                     "a record does not read back")
        precondition(reader.stop == .end, "bytes left after one record")
        let cut = bytes.count % encoded.count
        var short = HistoryRecordReader(UnsafeRawBufferPointer(rebasing: whole[..<cut]), segment: 1)
        precondition(short.next() == nil, "a prefix of a record read as one")
        precondition(short.stop == (cut == 0 ? .end : .truncated(offset: 0)), "a prefix is not a truncated tail")
    }
}
