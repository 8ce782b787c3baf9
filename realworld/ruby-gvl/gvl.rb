# A thread-per-connection HTTP server in plain Ruby, the shape of WEBrick
# or a threaded Rack server: each keep-alive connection gets a thread that
# parses requests and renders a response in Ruby (CPU work under the
# global VM lock), then blocks reading the next request (lock released).
#
#   ruby gvl.rb PORT
require "socket"

port = Integer(ARGV.fetch(0))
server = TCPServer.new("127.0.0.1", port)
$stdout.sync = true
puts "listening on 127.0.0.1:#{port}"

# render builds a page the way a template engine would: string and hash
# work in Ruby, about a millisecond of CPU per request on this machine.
def render(path)
  rows = (1..400).map { |i| { id: i, name: "item-#{i}", path: path, score: (i * 7919) % 1000 } }
  rows.sort_by! { |r| -r[:score] }
  rows.map { |r| "<tr><td>#{r[:id]}</td><td>#{r[:name]}</td><td>#{r[:score]}</td></tr>" }.join("\n")
end

def serve(sock)
  while (line = sock.gets)
    path = line.split(" ")[1] || "/"
    while (h = sock.gets) && h != "\r\n"; end
    body = render(path)
    sock.write("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: #{body.bytesize}\r\nConnection: keep-alive\r\n\r\n#{body}")
  end
rescue IOError, SystemCallError
ensure
  sock.close
end

loop do
  sock = server.accept
  Thread.new(sock) { |s| serve(s) }
end
